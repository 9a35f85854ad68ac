#include "write_behind.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <string>
#include <utility>

namespace ferry {
namespace {

// Empty chunks kept for the next bytes that wait: with the chunks being written, enough
// for a reader that keeps pace with the loop to cost no allocation.
constexpr std::size_t kSpareChunks = 4;
// The smallest chunk, whatever the caller's buffer: fewer, larger writev(2) calls.
constexpr std::size_t kMinChunk = std::size_t{64} << 10;

void wait_writable(int fd) {
  pollfd pfd{fd, POLLOUT, 0};
  while (::poll(&pfd, 1, -1) < 0 && errno == EINTR) {
  }
}

}  // namespace

int write_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w > 0) {
      p += w;
      n -= static_cast<std::size_t>(w);
    } else if (w < 0 && errno == EINTR) {
      continue;
    } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      wait_writable(fd);
    } else {
      return w < 0 ? errno : EIO;
    }
  }
  return 0;
}

int write_all(int fd, const std::deque<std::string>& chunks) {
  std::size_t next = 0;  // the first chunk not yet written whole
  std::size_t off = 0;   // bytes of it written
  std::vector<iovec> iov;
  while (next < chunks.size()) {
    iov.clear();
    for (std::size_t i = next; i < chunks.size() && iov.size() < IOV_MAX; ++i) {
      const std::size_t skip = i == next ? off : 0;
      if (chunks[i].size() > skip)
        iov.push_back({const_cast<char*>(chunks[i].data()) + skip, chunks[i].size() - skip});
    }
    if (iov.empty()) break;
    ssize_t w = ::writev(fd, iov.data(), static_cast<int>(iov.size()));
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      wait_writable(fd);
      continue;
    }
    if (w <= 0) return w < 0 ? errno : EIO;
    auto left = static_cast<std::size_t>(w);
    while (left > 0 && next < chunks.size()) {
      const std::size_t rest = chunks[next].size() - off;
      if (left < rest) {
        off += left;
        left = 0;
      } else {
        left -= rest;
        ++next;
        off = 0;
      }
    }
    while (next < chunks.size() && chunks[next].size() == off) {  // empty chunks
      ++next;
      off = 0;
    }
  }
  return 0;
}

WriteBehind::WriteBehind(int fd, std::size_t buffer, std::function<void()> wake)
    : fd_(fd),
      direct_(direct_mode(fd, own_fd_)),
      chunk_(std::max(buffer, kMinChunk)),
      wake_(std::move(wake)),
      thread_([this] { run(); }) {}

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

WriteBehind::Direct WriteBehind::direct_mode(int fd, UniqueFd& own_fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Direct::kNo;
  if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)) return Direct::kAll;
  if (S_ISSOCK(st.st_mode)) return Direct::kSocket;
  if (!S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode)) return Direct::kNo;
  // A new open file description of the same pipe or device: O_NONBLOCK on it leaves the
  // shell's alone. Fails (and the thread writes everything) without /proc, or for a FIFO
  // with no reader yet.
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  own_fd.reset(::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  struct stat own {};
  if (!own_fd || ::fstat(own_fd.get(), &own) != 0 || own.st_dev != st.st_dev ||
      own.st_ino != st.st_ino || own.st_rdev != st.st_rdev) {
    own_fd.reset();
    return Direct::kNo;
  }
  return Direct::kReopened;
}

std::size_t WriteBehind::write_now(const char* p, std::size_t n, int& err) {
  if (direct_ == Direct::kAll) {
    err = write_all(fd_, p, n);
    return err == 0 ? n : 0;
  }
  std::size_t done = 0;
  while (done < n) {
    const ssize_t w = direct_ == Direct::kSocket ? ::send(fd_, p + done, n - done, MSG_DONTWAIT)
                                                 : ::write(own_fd_.get(), p + done, n - done);
    if (w > 0) {
      done += static_cast<std::size_t>(w);
    } else if (w < 0 && errno == EINTR) {
      continue;
    } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      break;  // the reader is behind: the thread waits for it
    } else {
      err = w < 0 ? errno : EIO;
      break;
    }
  }
  return done;
}

void WriteBehind::fail(int err) {
  std::lock_guard<std::mutex> lock(mu_);
  if (error() == 0) error_.store(err, std::memory_order_release);
}

// Only the caller's thread adds bytes, so once queued() is 0 the thread has written
// everything it was given and bytes written here cannot overtake any.
bool WriteBehind::direct_now() const {
  return direct_ != Direct::kNo && !stopping_ && error() == 0 && queued() == 0;
}

void WriteBehind::write(const char* p, std::size_t n) {
  if (n == 0) return;
  if (direct_now()) {
    int err = 0;
    const std::size_t done = write_now(p, n, err);
    if (err != 0) {
      fail(err);
      return;
    }
    p += done;
    n -= done;
    if (n == 0) return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (error() != 0 || stopping_) return;
    append_locked(p, n);
    queued_.fetch_add(n, std::memory_order_relaxed);
  }
  cv_.notify_one();
}

void WriteBehind::append_locked(const char* p, std::size_t n) {
  while (n > 0) {
    if (pending_.empty() || pending_.back().size() == chunk_) {
      if (spare_.empty()) {
        pending_.emplace_back().reserve(chunk_);
      } else {
        pending_.push_back(std::move(spare_.back()));
        spare_.pop_back();
      }
    }
    std::string& last = pending_.back();
    const std::size_t take = std::min(n, chunk_ - last.size());
    last.append(p, take);
    p += take;
    n -= take;
  }
}

void WriteBehind::wake_at(std::size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (queued() > bytes) {
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
    cv_.wait(lock, [this] { return stopping_ || !pending_.empty(); });
    if (pending_.empty()) return;  // stopping, and everything is written
    // Everything waiting goes out in as few writes as the chunks take; the chunks go back
    // to be filled again. The bytes stay counted in queued_ until written.
    writing_.swap(pending_);
    lock.unlock();
    const int err = write_all(fd_, writing_);
    lock.lock();
    std::size_t written = 0;
    for (std::string& c : writing_) {
      written += c.size();
      if (spare_.size() < kSpareChunks) {
        c.clear();
        spare_.push_back(std::move(c));
      }
    }
    writing_.clear();
    queued_.fetch_sub(written, std::memory_order_release);
    if (err != 0) {
      error_.store(err, std::memory_order_release);
      pending_.clear();
      queued_.store(0, std::memory_order_release);
    }
    if (wake_armed_ && queued() <= wake_at_) {
      wake_armed_ = false;
      lock.unlock();
      if (wake_) wake_();
      lock.lock();
    }
  }
}

}  // namespace ferry
