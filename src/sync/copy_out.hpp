#pragma once
// Inside the sync part: a cached file copied into a job's copy (file_cache.cpp,
// spare_copies.cpp, copy_builder.cpp), the sign of life a long copy gives, errno's text.

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>

#include "ferry/common/result.hpp"
#include "ferry/sync/file_cache.hpp"

namespace ferry::sync_detail {

/// errno's text, for a one-line error.
inline std::string errno_text() { return std::strerror(errno); }

/// Copies the cached file `from` to `to` with `mode`, and marks `from` used (its access time).
Status copy_out(const std::string& from, const std::string& to, uint32_t mode);

/// Calls `still.call` at most once per `still.every`, when told of progress (each entry
/// made): a long copy out of the cache tells ferryrun that this host is alive.
class Heartbeat {
 public:
  explicit Heartbeat(const StillWorking& still)
      : still_(still), last_(std::chrono::steady_clock::now()) {}
  void operator()() {
    if (!still_.call) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < still_.every) return;
    last_ = now;
    still_.call();
  }

 private:
  const StillWorking& still_;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace ferry::sync_detail
