#include "fd_writer.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

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

FdWriter::FdWriter(int fd, std::size_t capacity, bool owns_fd)
    : fd_(fd), cap_(std::max<std::size_t>(capacity, 1)), owns_(owns_fd) {}

FdWriter::~FdWriter() {
  if (owns_ && fd_ >= 0) ::close(fd_);
}

void FdWriter::append_slow(const char* p, std::size_t n) {
  if (error_ != 0) return;
  if (!buf_) buf_ = std::make_unique<char[]>(cap_);
  if (n > cap_ - size_) flush();
  if (n >= cap_) {
    if (error_ == 0) error_ = write_all(fd_, p, n);
    return;
  }
  std::memcpy(buf_.get() + size_, p, n);
  size_ += n;
}

}  // namespace ferry
