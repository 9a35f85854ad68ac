#pragma once
/// \file
/// A host's side of `--sync` (docs/sync.md): the per-user cache of synced files, named by their
/// SHA-256 (`BASE/files/HASH`, BASE = `${XDG_CACHE_HOME:-~/.cache}/ferry/sync`, 0700, the
/// user's own), and the jobs' copies made from it (`BASE/jobs/NAME/`). A file is received under
/// a name of its own (`.HASH.part-PID`), checked against its hash, then renamed into place, so
/// two jobs receiving it at once both end with the one good copy. The file's extended attribute
/// `user.ferry.stamp` (else, where the filesystem takes none, `.HASH.ok` beside it) holds its
/// stamp (size, modification time, inode) when it was last checked. A job's copy is built
/// under a temporary name and renamed whole: ranks never see half a tree. Files are copied out of
/// the cache, not linked: a rank that writes into its copy leaves the cache as it was. A cached
/// file whose stamp changed since it was checked (written to: damaged, tampered with) is read and
/// checked against its name again when a job wants it; one that does not match is removed and
/// asked for again. A job's use sets its access time: eviction goes by that.

#include <sys/types.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/common/mapped_file.hpp"
#include "ferry/common/result.hpp"
#include "ferry/sync/tree.hpp"

namespace ferry {

struct CacheUsage {
  uint64_t bytes = 0;  ///< of the cached files
  size_t files = 0;
  size_t copies = 0;  ///< jobs' copies present
  size_t spares = 0;  ///< spare copies kept for the next job of the same tree
};

/// What a long copy out of the cache calls while it works (`call`, at most once per `every`).
struct StillWorking {
  std::function<void()> call;
  std::chrono::milliseconds every{1000};
};

class FileCache {
 public:
  /// What each sync that reaches a host leaves in its cache (evict()): files a job used in the
  /// last two weeks, 10 GiB at most.
  static constexpr int64_t kKeepSeconds = int64_t{14} * 24 * 3600;
  static constexpr uint64_t kKeepBytes = uint64_t{10} << 30;

  /// `${XDG_CACHE_HOME:-$HOME/.cache}/ferry/sync` for this process's environment.
  static std::string default_base();
  /// Opens (makes, 0700) the cache at `base`. Error, one line naming the directory: it is not
  /// the user's own, or others may write it.
  static Result<FileCache> open(const std::string& base);

  const std::string& base() const { return base_; }
  /// The hashes of `entries`' files that the cache lacks, each once, in the entries' order. A
  /// cached file that does not match its hash is removed and listed.
  std::vector<std::string> missing(const std::vector<TreeEntry>& entries) const;
  /// The next `bytes` of the file `hash` (in order; the first call starts it). With `last`,
  /// the file is checked and put in place. Error: a write failed, or the bytes do not match
  /// the hash (the partial file is removed either way).
  Status receive(const std::string& hash, std::string_view bytes, bool last);
  /// Removes what receive() holds of `hash` so far (a file left half-received).
  void discard(const std::string& hash) const;
  /// Where the cache keeps the file `hash` (whether it holds it or not).
  std::string path_of(const std::string& hash) const { return file_path(hash); }
  /// Takes the file at `path` (a job's copy of the file `hash`, CopyBuilder) into the cache,
  /// read once, unless the cache holds it already. It is checked against its hash as it is
  /// read: one its job changed meanwhile is not kept. Gives up when `stop` is set (what it
  /// wrote removed). True when the cache holds the file afterwards.
  bool adopt(const std::string& hash, const std::string& path, const std::atomic<bool>& stop) const;
  /// Builds the job copy `name` (under jobs/) from `entries`, every file already cached, and
  /// returns its path; `still` is told meanwhile (a copy of a large tree may take longer than
  /// ferryrun waits for a silent host). Error: one line naming the entry.
  Result<std::string> materialize(const std::vector<TreeEntry>& entries, const std::string& name,
                                  const StillWorking& still = {}) const;
  /// Removes a copy materialize() made (any modes its ranks left).
  static void remove_copy(const std::string& path);

  /// What a job's copy looked like when it was made: each entry's change time, inode and size,
  /// in the entries' order, with the entry itself. Any write, chmod, link, or file added or removed
  /// below a directory changes one of them.
  /// One line per entry ("STAMP ENTRY"), all in one buffer: a tree of 2,000 entries is one
  /// allocation, read from a stamps file in one piece, not a string per line.
  class CopyStamps {
   public:
    void reserve(size_t lines, size_t bytes) {
      ends_.reserve(lines);
      text_.reserve(bytes);
    }
    /// Adds a line (without its newline). Not to stamps read from a file.
    void push_back(std::string_view line) {
      text_.append(line);
      ends_.push_back(text_.size());
      text_.push_back('\n');
    }
    size_t size() const { return ends_.size(); }
    bool empty() const { return ends_.empty(); }
    std::string_view operator[](size_t i) const {
      const size_t from = i == 0 ? 0 : ends_[i - 1] + 1;
      return text().substr(from, ends_[i] - from);
    }
    /// Whether every line holds no newline of its own (text() has one per line): true of
    /// stamps read from a file, whose lines are found by their newlines.
    bool whole_lines() const {
      return file_ || static_cast<size_t>(std::count(text_.begin(), text_.end(), '\n')) == size();
    }
    /// Every line, each ended by a newline: a stamps file's text.
    std::string_view text() const { return file_ ? file_->text() : std::string_view(text_); }
    /// The lines of `text` (a last line without its newline is one too).
    static CopyStamps from_text(std::string text);
    /// The lines of a stamps file, kept mapped (read_stamps()); as from_text() takes them.
    static CopyStamps from_file(MappedFile file);
    bool operator==(const CopyStamps& o) const { return text() == o.text() && ends_ == o.ends_; }

   private:
    static std::vector<size_t> line_ends(std::string_view text);

    std::string text_;
    std::shared_ptr<const MappedFile> file_;  ///< the stamps file, when read from one
    std::vector<size_t> ends_;                ///< where each line ends in text() (its newline)
  };
  /// The stamps of the copy at `path` of `entries`, taken once the clock has moved past the
  /// last change (a write in the same tick would keep a stamp as it was).
  static CopyStamps stamp_copy(const std::string& path, const std::vector<TreeEntry>& entries);
  /// Keeps the copy `path` (no process uses it any more) as a spare for the next job of the
  /// same tree (`digest`: tree_digest(), 64 hex digits), at most kSpares of them; removes it
  /// where it cannot. `stamps_file`: the file that holds `stamps` already (the one
  /// take_untouched_spare() took the copy with), kept instead of written anew; `stamps` may then
  /// be empty (a spare taken on a SpareWatch's word: its stamps not read).
  void keep_spare(const std::string& path, const std::string& digest, const CopyStamps& stamps,
                  const std::string& stamps_file = "") const;
  /// A spare taken for a job (take_spare()).
  struct SpareCopy {
    std::string path;             ///< the job's copy now (jobs/NAME)
    CopyStamps stamps;            ///< as it was kept (none read when `watched`)
    std::vector<size_t> changed;  ///< the entries its job changed (or removed)
    bool stale_use = false;       ///< kept over a day ago: its files' use is marked again
    std::string stamps_file;      ///< its stamps, set aside (take_untouched_spare()); "" none
    bool watched = false;         ///< untouched as the host's SpareWatch saw, no stat of its own
  };
  /// Takes a spare copy of the tree `entries` (`digest`) as the job copy `name`, and finds
  /// what its job changed (a stat per entry); none when there is no spare of this tree.
  std::optional<SpareCopy> take_spare(const std::vector<TreeEntry>& entries,
                                      const std::string& digest, const std::string& name) const;
  /// The newest spare of the tree `digest` taken as the job copy `name` if it is untouched
  /// since its job (every entry's stamp as kept, no name added at its top): a stat per entry,
  /// and nothing else of the tree needed; none where a SpareWatch on this host (a warm pool's)
  /// watched it since before such a check and saw no change (then its stamps are not read
  /// either: `stamps_file` alone). None otherwise (an offer then takes and mends it).
  std::optional<SpareCopy> take_untouched_spare(const std::string& digest,
                                                const std::string& name) const;
  /// Brings the spare back to exactly what materialize() makes: its changed entries made again
  /// from the cache (their files must be there), names the tree lacks removed. Error: one line;
  /// the copy is removed. `still`: as for materialize().
  Status mend_spare(const SpareCopy& spare, const std::vector<TreeEntry>& entries,
                    const StillWorking& still = {}) const;
  /// The stamps of a spare once mend_spare() made it this tree's copy, as stamp_copy() would
  /// take them, but a stat only for what mending touched (the changed entries and the
  /// directories that hold them): every other entry keeps the stamp take_spare() found unchanged.
  static CopyStamps restamp_copy(const SpareCopy& spare, const std::vector<TreeEntry>& entries);
  /// take_spare() and mend_spare() at once: the copy, or "" (none, or it could not be mended).
  std::string reuse_spare(const std::vector<TreeEntry>& entries, const std::string& digest,
                          const std::string& name, size_t* mended = nullptr) const;
  /// Spares kept at most: each is a whole copy of its tree.
  static constexpr size_t kSpares = 2;
  /// Removes spares kept more than `max_age_s` ago (0: none for their age), or `all`, and
  /// what a keep_spare() cut short left.
  void evict_spares(int64_t max_age_s, bool all) const;

  CacheUsage usage() const;
  /// Removes cached files not used for `max_age_s` seconds, then the least recently used ones
  /// until the rest hold at most `max_bytes` (0: no size bound), and the copies of jobs whose
  /// ferryd is gone (killed before it could remove them). Returns the bytes removed.
  uint64_t evict(int64_t max_age_s, uint64_t max_bytes) const;
  /// evict() where it has not run in the last hour (BASE/.evicted says when it last did): it
  /// costs a stat per cached file.
  uint64_t evict_hourly(int64_t max_age_s, uint64_t max_bytes) const;
  /// Removes every cached file (`ferry cache --clear`) and the copies of ferryds that are gone;
  /// returns what was removed. A sync running at the time asks for its files again next time.
  CacheUsage clear() const;

 private:
  explicit FileCache(std::string base) : base_(std::move(base)) {}
  std::string file_path(const std::string& hash) const { return base_ + "/files/" + hash; }
  std::string part_path(const std::string& hash) const;
  std::string ok_path(const std::string& hash) const { return base_ + "/files/." + hash + ".ok"; }

  std::string base_;
};

/// A name for a job's copy on this host: this ferryd's pid (evict() removes the copies of dead
/// ones) and a random part.
std::string fresh_copy_name();

}  // namespace ferry
