#include "ferry/frontend/stdin_forwarder.hpp"

#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace ferry {

struct StdinForwarder::Shared {
  std::mutex m;
  std::condition_variable cv;
  size_t in_flight = 0;
  bool stopped = false;
  Send send;  // used on the loop thread only
};

StdinForwarder::StdinForwarder(asio::io_context& io, int fd, size_t window, Send send)
    : io_(io), fd_(fd), window_(window ? window : 1), shared_(std::make_shared<Shared>()) {
  shared_->send = std::move(send);
}

StdinForwarder::~StdinForwarder() { stop(); }

void StdinForwarder::start() {
  // Detached: a read() on a terminal cannot be interrupted portably, and the thread owns
  // nothing but its share of the state.
  std::thread([shared = shared_, &io = io_, fd = fd_, window = window_] {
    constexpr size_t kChunk = 64u << 10;
    std::string buf(kChunk, '\0');
    for (;;) {
      {
        std::unique_lock lock(shared->m);
        shared->cv.wait(lock, [&] { return shared->stopped || shared->in_flight < window; });
        if (shared->stopped) return;
      }
      ssize_t n = ::read(fd, buf.data(), buf.size());
      if (n < 0 && errno == EINTR) continue;
      std::string chunk = n > 0 ? buf.substr(0, static_cast<size_t>(n)) : std::string();
      {
        std::lock_guard lock(shared->m);
        if (shared->stopped) return;
        shared->in_flight += chunk.size();
      }
      asio::post(io, [shared, chunk = std::move(chunk)]() mutable {
        bool stopped = false;
        {
          std::lock_guard lock(shared->m);
          stopped = shared->stopped;
        }
        if (!stopped && shared->send) shared->send(std::move(chunk));
      });
      if (n <= 0) return;
    }
  }).detach();
}

void StdinForwarder::acknowledged(size_t bytes) {
  {
    std::lock_guard lock(shared_->m);
    shared_->in_flight -= std::min(bytes, shared_->in_flight);
  }
  shared_->cv.notify_one();
}

void StdinForwarder::stop() {
  {
    std::lock_guard lock(shared_->m);
    shared_->stopped = true;
  }
  shared_->cv.notify_one();
}

}  // namespace ferry
