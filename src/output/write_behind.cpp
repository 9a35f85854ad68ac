#include "write_behind.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace ferry {

int write_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w > 0) {
      p += w;
      n -= static_cast<std::size_t>(w);
    } else if (w < 0 && errno == EINTR) {
      continue;
    } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd pfd{fd, POLLOUT, 0};
      while (::poll(&pfd, 1, -1) < 0 && errno == EINTR) {
      }
    } else {
      return w < 0 ? errno : EIO;
    }
  }
  return 0;
}

WriteBehind::WriteBehind(int fd, std::function<void()> wake)
    : fd_(fd), wake_(std::move(wake)), thread_([this] { run(); }) {}

WriteBehind::~WriteBehind() { finish(); }

int WriteBehind::finish() {
  if (thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  return error();
}

void WriteBehind::push(std::string chunk) {
  if (chunk.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (error_ != 0 || stopping_) return;
    queued_ += chunk.size();
    chunks_.push_back(std::move(chunk));
  }
  cv_.notify_one();
}

std::size_t WriteBehind::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queued_;
}

int WriteBehind::error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

void WriteBehind::wake_at(std::size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (queued_ > bytes) {
      wake_at_ = bytes;
      wake_armed_ = true;
      return;
    }
    wake_armed_ = false;
  }
  if (wake_) wake_();
}

void WriteBehind::run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || !chunks_.empty(); });
    if (chunks_.empty()) return;  // stopping, and everything is written
    // The chunk stays queued (and counted) until written; only this thread pops.
    const std::string& chunk = chunks_.front();
    lock.unlock();
    const int err = write_all(fd_, chunk.data(), chunk.size());
    lock.lock();
    queued_ -= chunk.size();
    chunks_.pop_front();
    if (err != 0) {
      error_ = err;
      chunks_.clear();
      queued_ = 0;
    }
    if (wake_armed_ && queued_ <= wake_at_) {
      wake_armed_ = false;
      lock.unlock();
      if (wake_) wake_();
      lock.lock();
    }
  }
}

}  // namespace ferry
