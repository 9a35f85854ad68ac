#pragma once
/// \file
/// A warm pool's watch over the trees its jobs sync (docs/sync.md, *Through a warm pool*).
/// ferryrun reads a `--sync` tree at every launch: a stat per entry, its hash index, the
/// tree's list built anew. The pool process lives from job to job on ferryrun's machine, so it
/// can watch the tree with inotify (each directory and regular file), and tell the next launch that
/// nothing in it changed since the launch before read it. The launch then takes that launch's
/// reading (a snapshot ferryrun wrote beside its hash index) instead of reading the tree again.
///
/// The watch is an epoch: ferryrun asks about the tree with the token of its snapshot; the
/// pool answers "unchanged" only if it has watched every directory and file of the tree since that
/// token was handed out and seen no event in it since. Otherwise it (re)places its watches
/// and hands out a new token, and ferryrun reads the tree (after the watches are in place,
/// so a change during the reading is an event) and writes the snapshot with that token.
/// Trees on file systems whose changes inotify may not see (NFS, FUSE, any but a local
/// disk's or memory's) are not watched; nor is a tree of more than kMaxDirectories directories
/// or kMaxFiles files, nor one whose watches cannot be had (inotify's are counted per user).
/// Each tree has an inotify descriptor of its own, so trees that share directories each see
/// their changes.
///
/// What inotify does not tell, and so what a watched tree does not see: a write through a
/// writable shared mapping of one of its files made before the watch began and still held
/// (the mapping's end is an event). A write through a hard link from outside the tree is
/// seen: each file has a watch of its own.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/common/posix_handles.hpp"
#include "ferry/common/result.hpp"
#include "ferry/sync/tree.hpp"

namespace ferry {

class TreeWatch {
 public:
  static constexpr size_t kMaxDirectories = 20000;
  static constexpr size_t kMaxFiles = 100000;
  static constexpr size_t kMaxTrees = 16;

  TreeWatch();

  struct Answer {
    bool unchanged = false;
    std::string token;  ///< a new epoch's, when not unchanged; "" when the tree is not watched
  };
  /// About the tree at `root` (an absolute, real path): unchanged since `token` was handed
  /// out, else a new token (see the file comment).
  Answer ask(const std::string& root, const std::string& token);

 private:
  struct Tree {
    UniqueFd notify;       ///< the tree's own inotify descriptor
    std::vector<int> wds;  ///< its watches, sorted
    uint64_t epoch = 0;
    bool changed = true;
    uint64_t used = 0;
  };
  void read_events();
  static bool watch(const std::string& root, Tree& t);
  void forget(const std::string& root);

  std::string instance_;  ///< random: a token of an earlier pool is never this one's
  std::map<std::string, Tree> trees_;
  uint64_t epochs_ = 0;
  uint64_t asked_ = 0;
};

/// The pool's answer over its control socket at `socket` (pool_server's "tree" request):
/// nullopt when there is none (no pool, an error).
std::optional<TreeWatch::Answer> ask_tree_watch(const std::string& socket, const std::string& root,
                                                const std::string& token);

/// scan_tree(), through the pool's watch where `rules.watch_socket` names one: the snapshot of
/// the launch before when the tree is unchanged since it, else the tree read (and its snapshot
/// written for the next launch).
Result<SyncTree> scan_tree_watched(const SyncSpec& spec, const SyncRules& rules);

/// A SyncTree as a snapshot file holds it, and back (nullopt: not one).
std::string encode_tree(const SyncTree& tree);
std::optional<SyncTree> decode_tree(std::string_view bytes);

}  // namespace ferry
