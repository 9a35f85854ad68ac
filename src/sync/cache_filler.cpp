// The cache takes in a job's received files from its copy, on a thread of its own.
#include "ferry/sync/cache_filler.hpp"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <numeric>

namespace ferry {

namespace {

uint64_t bytes_of(const std::vector<CopyBuilder::Received>& files) {
  return std::accumulate(files.begin(), files.end(), uint64_t{0},
                         [](uint64_t n, const CopyBuilder::Received& r) { return n + r.size; });
}

}  // namespace

CacheFiller::CacheFiller(FileCache cache, std::vector<CopyBuilder::Received> files)
    : cache_(std::move(cache)), files_(std::move(files)), left_bytes_(bytes_of(files_)) {
  if (!files_.empty()) thread_ = std::thread([this] { run(); });
}

CacheFiller::~CacheFiller() {
  if (left_bytes_.load() > kFinishBytes) stop_ = true;
  wait();
}

void CacheFiller::wait() {
  if (thread_.joinable()) thread_.join();
}

void CacheFiller::run() {
  // Below the ranks: a nice of 10 and the lowest best-effort I/O priority, for this thread
  // alone (Linux keeps both per thread).
  const auto tid = static_cast<id_t>(::syscall(SYS_gettid));
  ::setpriority(PRIO_PROCESS, tid, 10);
  constexpr int kIoprioWhoProcess = 1, kIoprioClassBestEffort = 2, kIoprioClassShift = 13;
  ::syscall(SYS_ioprio_set, kIoprioWhoProcess, tid,
            (kIoprioClassBestEffort << kIoprioClassShift) | 7);
  for (const CopyBuilder::Received& f : files_) {
    if (stop_.load()) return;
    if (cache_.adopt(f.hash, f.path, stop_)) ++taken_;
    left_bytes_ -= f.size;
  }
}

}  // namespace ferry
