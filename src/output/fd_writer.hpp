#pragma once
/// \file
/// A buffered writer on one fd, for the console and the per-rank files.

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string_view>

namespace ferry {

/// Writes all of [p, p+n) to fd, over partial writes, EINTR and EAGAIN (a non-blocking fd
/// is waited on with poll). Returns 0 or the errno that stopped it.
int write_all(int fd, const char* p, std::size_t n);

/// Appends that do not fit flush first; appends at least a buffer long go straight to the
/// fd, so payload is copied at most once. After an error it drops everything.
class FdWriter {
 public:
  FdWriter(int fd, std::size_t capacity, bool owns_fd);
  ~FdWriter();
  FdWriter(const FdWriter&) = delete;
  FdWriter& operator=(const FdWriter&) = delete;

  void append(const char* p, std::size_t n) {
    if (n <= cap_ - size_ && buf_) {
      std::memcpy(buf_.get() + size_, p, n);
      size_ += n;
      return;
    }
    append_slow(p, n);
  }
  void append(std::string_view s) { append(s.data(), s.size()); }
  // The next `n` bytes are one line: flush first if they would straddle a full buffer, so
  // that each write(2) ends at a line end (other writers to a shared terminal then cannot
  // split our lines either).
  void keep_together(std::size_t n) {
    if (n > cap_ - size_ && n <= cap_) flush();
  }

  void flush() {
    if (size_ > 0 && error_ == 0) error_ = write_all(fd_, buf_.get(), size_);
    size_ = 0;
  }
  std::size_t size() const { return size_; }
  int error() const { return error_; }
  int fd() const { return fd_; }

 private:
  void append_slow(const char* p, std::size_t n);

  int fd_;
  std::size_t cap_;
  bool owns_;
  std::unique_ptr<char[]> buf_;  // allocated on first use: most per-rank files stay small
  std::size_t size_ = 0;
  int error_ = 0;
};

}  // namespace ferry
