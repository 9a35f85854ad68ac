#include "child_reaper.hpp"

#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <asio/posix/stream_descriptor.hpp>
#include <asio/steady_timer.hpp>
#include <cerrno>
#include <memory>
#include <system_error>
#include <utility>

namespace ferry {
namespace {

constexpr auto kFirstPoll = std::chrono::milliseconds(1);
constexpr auto kLongestPoll = std::chrono::milliseconds(50);

// One wait in flight. Its pending asio operations hold it alive; finish() ends them all.
class Reap : public std::enable_shared_from_this<Reap> {
 public:
  Reap(asio::io_context& io, pid_t pid, ReapHandler done)
      : pidfd_(io), poll_timer_(io), limit_timer_(io), pid_(pid), done_(std::move(done)) {}

  void start(std::chrono::milliseconds limit) {
    // Watched before the first try: an exit after that try still raises the pidfd's edge.
    // By number: glibc's wrapper is newer than some of the systems ferry runs on.
    const int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
    if (fd >= 0) pidfd_.assign(fd);
    if (try_reap()) return;
    limit_timer_.expires_after(limit);
    limit_timer_.async_wait([self = shared_from_this()](std::error_code ec) {
      if (!ec) self->finish(std::nullopt);
    });
    if (pidfd_.is_open()) {
      watch();
    } else {
      poll();
    }
  }

 private:
  bool try_reap() {
    int status = 0;
    pid_t r = 0;
    do {
      r = ::waitpid(pid_, &status, WNOHANG);
    } while (r < 0 && errno == EINTR);
    if (r == 0) return false;
    finish(r == pid_ ? std::optional<int>(status) : std::nullopt);  // r < 0: not our child
    return true;
  }

  void watch() {
    pidfd_.async_wait(asio::posix::descriptor_base::wait_read,
                      [self = shared_from_this()](std::error_code ec) {
                        if (self->finished_ || ec == asio::error::operation_aborted) return;
                        // Readable means exited; should the status lag, poll for it.
                        if (!self->try_reap()) self->poll();
                      });
  }

  void poll() {
    poll_timer_.expires_after(interval_);
    interval_ = std::min(interval_ * 2, kLongestPoll);
    poll_timer_.async_wait([self = shared_from_this()](std::error_code ec) {
      if (ec || self->finished_) return;
      if (!self->try_reap()) self->poll();
    });
  }

  void finish(std::optional<int> status) {
    if (finished_) return;
    finished_ = true;
    std::error_code ignored;
    pidfd_.close(ignored);
    poll_timer_.cancel();
    limit_timer_.cancel();
    if (auto done = std::move(done_)) done(status);
  }

  asio::posix::stream_descriptor pidfd_;
  asio::steady_timer poll_timer_;
  asio::steady_timer limit_timer_;
  pid_t pid_;
  ReapHandler done_;
  std::chrono::milliseconds interval_ = kFirstPoll;
  bool finished_ = false;
};

}  // namespace

void async_reap(asio::io_context& io, pid_t pid, std::chrono::milliseconds limit,
                ReapHandler done) {
  if (pid <= 0) {
    if (done) done(std::nullopt);
    return;
  }
  std::make_shared<Reap>(io, pid, std::move(done))->start(limit);
}

}  // namespace ferry
