#pragma once
/// \file
/// The front end's side of `--sync` for one host: the files its cache lacks (its SyncNeed), read
/// here in pieces and handed out while fewer than a window of bytes wait for the host's
/// acknowledgement, so every host gets its files at once without the job's memory growing with
/// the tree.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ferry/common/posix_handles.hpp"
#include "ferry/common/result.hpp"
#include "ferry/sync/tree.hpp"

namespace ferry {

class TreeSender {
 public:
  struct Piece {
    std::string hash;
    std::string data;
    bool last = false;
  };
  /// Bytes a host may have unacknowledged, and the size of a piece. 1 MiB: over SSH a larger
  /// window made a first sync 4 times slower (20 MB to one host: 1.48 s with 4 MiB, 0.37 s
  /// with 1 MiB), the SSH session's write path stalling once the channel's window is spent.
  static constexpr uint64_t kWindow = uint64_t{1} << 20;
  static constexpr size_t kPiece = size_t{256} << 10;

  explicit TreeSender(std::shared_ptr<const SyncTree> tree);

  /// The host's wants, found by one pass over the tree (kept in the tree's order; a hash asked
  /// twice is sent once). Error: a hash the tree does not hold.
  Status need(const std::vector<std::string>& hashes);
  /// The next pieces, up to the window. Error, one line naming the file: it cannot be read, or
  /// it changed size since it was hashed.
  Result<std::vector<Piece>> next();
  void acked(uint64_t bytes) { in_flight_ -= bytes < in_flight_ ? bytes : in_flight_; }
  bool all_sent() const { return next_ == wanted_.size(); }

  size_t files_sent() const { return next_; }
  uint64_t bytes_wanted() const { return bytes_wanted_; }

 private:
  std::shared_ptr<const SyncTree> tree_;
  std::vector<const TreeEntry*> wanted_;
  size_t next_ = 0;      // the file being sent
  uint64_t offset_ = 0;  // into it
  UniqueFd fd_;          // it, open
  uint64_t in_flight_ = 0;
  uint64_t bytes_wanted_ = 0;
};

}  // namespace ferry
