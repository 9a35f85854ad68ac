#pragma once
/// \file
/// What `--sync` (and mpirun's `--preload-*`) asks to read, and its reading on a thread of its
/// own: ferryrun checks what needs no walk at once (each DIR a directory, each single file a
/// file), and reads the rest (the walk, the hashes of changed files, the tree's digest) while
/// its hosts are being reached. Nothing of the tree is sent before the reading ends; a tree the
/// reading refuses (a link out of it, a loop, a file it cannot read, over --sync-max) still
/// stops the job with one line, exit status 2.

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "ferry/common/result.hpp"
#include "ferry/sync/tree.hpp"

namespace ferry {

/// The trees to put on every host, in order (a later part's path replaces an earlier one's).
struct SyncRequest {
  struct Part {
    std::optional<SyncSpec> tree;    ///< --sync DIR[:DEST]
    std::vector<std::string> files;  ///< else single files at the copy's top (--preload-*)
    std::string option;              ///< the files' option, for errors
  };
  std::vector<Part> parts;
  SyncRules rules;  ///< max_bytes: over all parts
};

/// What can be refused without a walk (check_tree_source, check_single_files): a DIR that is
/// not a directory, a single file that is not a regular file, two single files of one name.
/// Error: one line naming it.
Status check_sync_request(const SyncRequest& request);

/// The whole reading: each part (scan_tree, scan_files), --sync-max over all of them, the parts
/// merged (merge_trees) and the tree's digest. Error: one line (scan_tree's, scan_files's, or
/// "over --sync-max", or "reading stopped" once `request.rules.stop` is set).
Result<SyncTree> read_sync_request(const SyncRequest& request);

/// One reading of a SyncRequest on a thread of its own; `done` gets the result on that
/// thread (a caller with an event loop posts it there).
class TreeReader {
 public:
  using Done = std::function<void(Result<SyncTree>)>;
  TreeReader(SyncRequest request, Done done);
  /// Asks the reading to stop (at its next directory or file) and waits for the thread; `done`
  /// may still have been called.
  ~TreeReader();
  TreeReader(const TreeReader&) = delete;
  TreeReader& operator=(const TreeReader&) = delete;

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace ferry
