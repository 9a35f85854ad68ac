#pragma once
/// \file
/// The host's cache takes in the files a job's first copy received straight into itself
/// (CopyBuilder), on a thread of low priority while the job runs: the job's launch does not
/// wait for a second write of every byte. Each is read from the copy once and checked against
/// its hash (a rank may write into its copy meanwhile: such a file is not kept). When the job
/// ends first, the files left are finished where they are few (kFinishBytes), else given up: a
/// job's end does not wait for its tree to be written again, and a later job of the tree starts
/// from this job's copy (kept as a spare) or receives what neither holds.

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "ferry/sync/copy_builder.hpp"
#include "ferry/sync/file_cache.hpp"

namespace ferry {

class CacheFiller {
 public:
  /// What a job's end still waits to be taken in.
  static constexpr uint64_t kFinishBytes = uint64_t{8} << 20;

  /// Starts taking `files` (CopyBuilder::received()) into `cache`.
  CacheFiller(FileCache cache, std::vector<CopyBuilder::Received> files);
  /// Finishes (kFinishBytes or less left) or gives up, and waits for the thread.
  ~CacheFiller();
  CacheFiller(const CacheFiller&) = delete;
  CacheFiller& operator=(const CacheFiller&) = delete;

  /// Waits until every file was tried (tests).
  void wait();
  /// Files the cache holds after their turn (tests).
  size_t taken() const { return taken_.load(); }

 private:
  void run();

  FileCache cache_;
  std::vector<CopyBuilder::Received> files_;
  std::atomic<uint64_t> left_bytes_{0};
  std::atomic<size_t> taken_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace ferry
