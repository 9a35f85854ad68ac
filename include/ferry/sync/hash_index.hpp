#pragma once
/// \file
/// What ferryrun remembers of a synced tree's hashes (docs/sync.md): for each file, its
/// SHA-256 and the stamp it had when read (size, modification and change times, inode). A file
/// whose stamp is the same at the next launch is not read again. A stamp taken within
/// `racy_ns` of the file's last change is not trusted (a write in the same clock tick would
/// leave the stamp as it was, as git's index knows): such a file is read again next time. One
/// index per tree (by its real path), under the user's cache (`BASE/hashes/`, 0700);
/// indexes not written for 14 days are removed.

#include <sys/stat.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ferry/common/mapped_file.hpp"
#include "ferry/common/result.hpp"

namespace ferry {

class HashIndex {
 public:
  /// Two seconds: the change times of files on a network file system come from its server's
  /// clock, which may be behind this one's.
  static constexpr int64_t kDefaultRacyNs = 2'000'000'000;

  /// The index of the tree at `root` kept under `dir` ("": none kept; every file is read).
  /// An index that cannot be read or is not this tree's is started afresh.
  static HashIndex open(const std::string& dir, const std::string& root,
                        int64_t racy_ns = kDefaultRacyNs);

  /// The SHA-256 of the file `rel` of the tree (read at `full`, which `st` describes): the one
  /// remembered if its stamp is unchanged, else read. Error: one line naming the file.
  Result<std::string> hash(const std::string& rel, const std::string& full, const struct stat& st);
  /// The hash remembered for `rel` if `st` is the stamp it was read with; "" when the file must
  /// be read (read() then).
  std::string remembered(std::string_view rel, const struct stat& st);
  /// Reads the file `rel` (at `full`, which `st` described) for its hash, remembered for next
  /// time unless it changed while read. Error: one line naming the file.
  Result<std::string> read(const std::string& rel, const std::string& full, const struct stat& st);
  /// Files the index holds (before this launch): a tree's size, roughly, before it is walked.
  size_t size() const { return before_.size(); }
  /// The same, the file stat-ed here.
  Result<std::string> hash(const std::string& rel, const std::string& full);
  /// Writes the files hashed since open() (only those: the tree as it is now) for next time.
  /// Errors are ignored: without an index the next launch reads every file.
  void save() const;

  size_t files_read() const { return read_; }
  size_t files_remembered() const { return remembered_; }

 private:
  struct Stamp {
    uint64_t size = 0;
    int64_t mtime_ns = 0;
    int64_t ctime_ns = 0;
    uint64_t ino = 0;
    int64_t hashed_ns = 0;  ///< the clock just before the file was read
    bool operator==(const Stamp&) const = default;
  };
  /// A file as the index remembers it; `hash` points into the index's text (or, for a file
  /// read at this launch, into its entry of now_).
  struct Known {
    Stamp stamp;
    std::string_view hash;
    bool kept = false;  ///< remembered at this launch: the file is still there, unchanged
  };
  struct Read {
    Stamp stamp;
    std::string hash;
  };
  static Stamp stamp_of(const struct stat& st);
  static std::string_view parse_line(std::string_view line, Known& k);
  bool trusted(const Known& k, const Stamp& now) const;

  std::string file_;  ///< "": none kept
  std::string root_;
  int64_t racy_ns_ = kDefaultRacyNs;
  /// The index file, mapped (moving the index keeps the views into it).
  MappedFile text_;
  /// The files remembered, by path (views into text_), sorted: one array, no node per file.
  std::vector<std::pair<std::string_view, Known>> before_;
  std::map<std::string, Read, std::less<>> now_;  ///< the files read at this launch
  size_t read_ = 0;
  size_t remembered_ = 0;
};

}  // namespace ferry
