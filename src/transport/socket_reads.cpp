// recv() and poll() for libssh's sockets, served from a buffer (socket_reads.hpp): what
// ferryrun's own recv() and poll() (socket_reads_interposer.cpp) call. The C library's
// functions are looked up once with dlsym(RTLD_NEXT).

#include "ferry/transport/socket_reads.hpp"

#include <dlfcn.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>

namespace ferry::socket_reads {
namespace {

using RecvFn = ssize_t (*)(int, void*, size_t, int);
using PollFn = int (*)(pollfd*, nfds_t, int);

constexpr std::size_t kBuffer = std::size_t{256} * 1024;
constexpr std::size_t kSlots = 64;  // sessions read at once; more just read plainly

// One attached socket. `fd` is the key every thread looks at: a thread only ever finds
// its own sockets (it compares with fds it reads), and a slot is claimed with a
// compare-and-swap, so sessions on several I/O threads attach at once; the buffer belongs
// to the thread that attached it (the session's I/O thread) until it detaches.
struct Slot {
  std::atomic<int> fd{-1};
  std::unique_ptr<char[]> data;
  std::size_t pos = 0;
  std::size_t len = 0;
  bool writes_pending = false;
};

std::array<Slot, kSlots>& slots() {
  static std::array<Slot, kSlots> s;
  return s;
}

Slot* find(int fd) {
  if (fd < 0) return nullptr;
  for (Slot& s : slots())
    if (s.fd.load(std::memory_order_relaxed) == fd) return &s;
  return nullptr;
}

RecvFn real_recv() {
  static const auto fn = reinterpret_cast<RecvFn>(::dlsym(RTLD_NEXT, "recv"));
  return fn;
}

PollFn real_poll() {
  static const auto fn = reinterpret_cast<PollFn>(::dlsym(RTLD_NEXT, "poll"));
  return fn;
}

std::size_t held(int fd) {
  const Slot* s = find(fd);
  return s ? s->len - s->pos : 0;
}

bool told_writes_pending(int fd) {
  const Slot* s = find(fd);
  return s != nullptr && s->writes_pending;
}

}  // namespace

void attach(int fd) {
  if (fd < 0 || find(fd) != nullptr || !real_recv() || !real_poll()) return;
  for (Slot& s : slots()) {
    int free = -1;
    // Acquire: what the last owner left in the slot (its buffer) is seen whole.
    if (!s.fd.compare_exchange_strong(free, fd, std::memory_order_acquire)) continue;
    if (!s.data)
      s.data = std::make_unique_for_overwrite<char[]>(kBuffer);  // pages touched as filled
    s.pos = s.len = 0;
    s.writes_pending = false;
    return;
  }
}

void detach(int fd) {
  if (Slot* s = find(fd)) {
    s->pos = s->len = 0;
    s->fd.store(-1, std::memory_order_release);
  }
}

std::size_t buffered(int fd) { return held(fd); }

void writes_pending(int fd, bool pending) {
  if (Slot* s = find(fd)) s->writes_pending = pending;
}

ssize_t recv_through(int fd, void* buf, size_t n, int flags) {
  Slot* s = flags == 0 ? find(fd) : nullptr;
  if (s == nullptr) {
    RecvFn fn = real_recv();
    if (fn == nullptr) {
      errno = ENOSYS;
      return -1;
    }
    return fn(fd, buf, n, flags);
  }
  if (s->pos == s->len) {
    ssize_t got = real_recv()(fd, s->data.get(), kBuffer, 0);
    if (got <= 0) return got;  // EOF or an error (EAGAIN included), errno as set
    s->pos = 0;
    s->len = static_cast<std::size_t>(got);
  }
  const std::size_t take = std::min(n, s->len - s->pos);
  std::memcpy(buf, s->data.get() + s->pos, take);
  s->pos += take;
  return static_cast<ssize_t>(take);
}

int poll_through(pollfd* fds, nfds_t n, int timeout) {
  PollFn fn = real_poll();
  if (fn == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  // Buffered bytes make an fd readable. A lone fd is answered without a system call,
  // readable only, unless its owner said it has bytes queued to write: libssh asks for
  // POLLOUT at every poll, but sends what it queued (a WINDOW_ADJUST, a keepalive) only
  // after a poll reported the socket writable, so that question then gets a real answer
  // from a poll that does not wait. Left unanswered, the window would stay shut until the
  // buffer is empty, and a reader that waits for writability would spin. Several fds are
  // looked at without waiting.
  bool any = false;
  for (nfds_t i = 0; i < n; ++i)
    if ((fds[i].events & POLLIN) && held(fds[i].fd) > 0) any = true;
  if (!any) return fn(fds, n, timeout);
  int ready = 0;
  if (n == 1 && !((fds[0].events & POLLOUT) && told_writes_pending(fds[0].fd))) {
    fds[0].revents = POLLIN;
    return 1;
  }
  if (fn(fds, n, 0) < 0) return -1;
  for (nfds_t i = 0; i < n; ++i) {
    if ((fds[i].events & POLLIN) && held(fds[i].fd) > 0) fds[i].revents |= POLLIN;
    if (fds[i].revents != 0) ++ready;
  }
  return ready;
}

}  // namespace ferry::socket_reads
