#pragma once
/// \file
/// The trees `ferryrun --sync DIR[:DEST]` puts on every host (docs/sync.md): what is in them,
/// read here, before anything is sent. A tree is its directories, regular files (with their
/// permission bits and SHA-256) and the symlinks that stay inside it; a symlink that points
/// outside is refused, a device, socket or FIFO is skipped (each said in one line). Paths are
/// left out by `--sync-exclude` patterns and by the tree's `.ferryignore`, or else its
/// `.gitignore` (the top-level file only), read as git reads one: `#` comments, `!` to take
/// a path back, a trailing `/` for directories only, a pattern with a `/` anchored at the top,
/// `**` across directories; the last pattern that matches decides, and a directory left out is
/// not entered.

#include <sys/stat.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ferry/common/result.hpp"
#include "ferry/sync/hash_index.hpp"

namespace ferry {

struct TreeEntry {
  enum class Kind : uint8_t { kDirectory = 0, kFile = 1, kSymlink = 2 };
  std::string path;  ///< relative, '/'-separated, parents before children
  Kind kind = Kind::kFile;
  uint32_t mode = 0;   ///< permission bits (07777)
  uint64_t size = 0;   ///< a file's bytes
  std::string hash;    ///< a file's SHA-256, hex
  std::string target;  ///< a symlink's target, as written
  std::string source;  ///< where a file was read on this machine (not sent)
  bool operator==(const TreeEntry&) const = default;
};

/// The patterns that leave paths out (see the file comment).
class IgnoreRules {
 public:
  /// One pattern (a line of an ignore file, or --sync-exclude's). Blank lines and comments
  /// are ignored.
  void add(const std::string& pattern);
  /// The lines of an ignore file.
  void add_file_text(const std::string& text);
  /// Whether `path` (relative; `directory` when it is one) is left out.
  bool excluded(const std::string& path, bool directory) const;
  bool empty() const { return rules_.empty(); }

 private:
  struct Rule {
    std::string pattern;
    bool negate = false;
    bool directory_only = false;
    bool anchored = false;              // matched against the whole path, not the last name
    std::vector<std::string> segments;  // an anchored pattern's, split at '/'
  };
  std::vector<Rule> rules_;
};

struct SyncSpec {
  std::string source;  ///< DIR, as given
  std::string dest;    ///< DEST inside the job's copy ("" = its top)
};

/// Parses `DIR[:DEST]`. DEST must be a relative path without `..` (the job's copy is private
/// to the job). Error: one line naming the argument.
Result<SyncSpec> parse_sync_spec(const std::string& text);

struct SyncRules {
  std::vector<std::string> excludes;  ///< --sync-exclude
  uint64_t max_bytes = 0;             ///< --sync-max; 0: no limit
  /// Where the hashes of files are remembered between launches (HashIndex; "": nowhere).
  std::string hash_index_dir;
  /// How soon after a file's change its remembered hash is not trusted (HashIndex).
  int64_t hash_racy_ns = HashIndex::kDefaultRacyNs;
  /// A warm pool's control socket, whose watch may say the tree is unchanged since the launch
  /// before read it (tree_watch.hpp; "": none).
  std::string watch_socket;
  /// Set (by another thread): the reading ends at its next directory or file, with an error.
  const std::atomic<bool>* stop = nullptr;
};

struct SyncTree {
  /// DEST's parents, then the tree under DEST. A tree taken from a warm pool's snapshot
  /// (scan_tree_watched) decodes them here, on their first use: a launch whose every host
  /// keeps the tree needs its digest alone. From one thread at a time.
  const std::vector<TreeEntry>& entries() const;
  std::vector<TreeEntry>& entries();
  /// Entries that `decode` makes on their first use, in place of those held now.
  void defer_entries(std::function<std::vector<TreeEntry>()> decode);
  /// Whether the entries are still to be decoded.
  bool entries_deferred() const { return static_cast<bool>(decode_); }

  uint64_t bytes = 0;  ///< of the files
  size_t files = 0;
  std::vector<std::string> skipped;  ///< one line each: a device, socket or FIFO left out
  std::string ignore_file;           ///< the ignore file read ("" none)
  size_t files_read = 0;             ///< files read for their hashes (the others' were remembered)
  bool from_snapshot = false;        ///< not read: unchanged since the launch before, as a pool saw
  std::string digest;  ///< tree_digest() of the entries, once they are final ("" none)

 private:
  mutable std::vector<TreeEntry> entries_;
  mutable std::function<std::vector<TreeEntry>()> decode_;
};

/// Reads the tree of `spec` with `rules`. Error, one line naming the path: DIR is not a
/// directory, a symlink points outside it, a file cannot be read, or the files' bytes are
/// over `max_bytes` (said before any file is read). A file unchanged since a launch that read
/// it is not read again (SyncRules::hash_index_dir).
Result<SyncTree> scan_tree(const SyncSpec& spec, const SyncRules& rules);

/// What scan_tree refuses before its walk: DIR is not a directory. Error: one line naming it.
/// `top`: where DIR's stat goes, if given.
Status check_tree_source(const SyncSpec& spec, struct stat* top = nullptr);

/// mpirun's --preload-files and --preload-binary: single files, each at the top of the job's
/// copy under its own name, mode and SHA-256 kept. `option` names them in errors. Error, one
/// line: a path that is not a regular file, or cannot be read; two files of one name.
Result<SyncTree> scan_files(const std::vector<std::string>& files, const std::string& option);

/// What scan_files refuses before it reads: a path that is not a regular file, two files of
/// one name. Error: one line.
Status check_single_files(const std::vector<std::string>& files, const std::string& option);

/// "512 B", "3.4 MiB": bytes for messages.
std::string bytes_text(uint64_t bytes);

/// The tree's name as a whole: the SHA-256 of every entry (path, kind, mode, size, hash,
/// target), hex. A host keeps its copy under it. Error: libcrypto cannot be loaded.
Result<std::string> tree_digest(const std::vector<TreeEntry>& entries);

/// Several trees (repeated --sync) as one: later entries replace earlier ones of the same path.
SyncTree merge_trees(std::vector<SyncTree> trees);

}  // namespace ferry
