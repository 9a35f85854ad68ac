#pragma once
/// \file
/// A buffered writer on one fd, writing itself or through a WriteBehind.

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "write_behind.hpp"

namespace ferry {

/// Appends that do not fit flush first; appends at least a buffer long go out as they are,
/// so payload is copied at most once on the way. After an error it drops everything.
class FdWriter {
 public:
  FdWriter(int fd, std::size_t capacity, bool owns_fd);
  /// Writes what a WriteBehind still holds (see stop_behind), closes an owned fd.
  ~FdWriter();
  FdWriter(const FdWriter&) = delete;
  FdWriter& operator=(const FdWriter&) = delete;

  void append(const char* p, std::size_t n) {
    if (n <= cap_ - buf_.size() && buf_.capacity() >= cap_) {
      buf_.append(p, n);
      return;
    }
    append_slow(p, n);
  }
  void append(std::string_view s) { append(s.data(), s.size()); }
  // The next `n` bytes are one line: flush first if they would straddle a full buffer, so
  // that each write(2) ends at a line end (other writers to a shared terminal then cannot
  // split our lines either).
  void keep_together(std::size_t n) {
    if (n > cap_ - buf_.size() && n <= cap_) flush();
  }
  /// Room for `n` more bytes at the end of the buffer, which the caller fills, all of them;
  /// the buffer is flushed first when they do not fit. nullptr when `n` is larger than a
  /// buffer or after an error (append() then does the right thing).
  char* extend(std::size_t n) {
    if (n > cap_ - buf_.size() || buf_.capacity() < cap_ || error_ != 0) return extend_slow(n);
    const std::size_t old = buf_.size();
    buf_.resize(old + n);
    return buf_.data() + old;
  }
  /// Writes the buffer out, or hands it to the WriteBehind without waiting.
  void flush();

  /// From now on writes never wait for the fd's reader: what it does not take at once a
  /// thread writes (see WriteBehind); `wake` as there.
  void start_behind(std::function<void()> wake);
  /// Waits until the thread wrote everything, then writes directly again.
  void stop_behind();
  WriteBehind* behind() const { return behind_.get(); }

  /// Bytes in the buffer.
  std::size_t size() const { return buf_.size(); }
  /// Bytes handed to the WriteBehind and not yet written.
  std::size_t queued() const { return behind_ ? behind_->queued() : 0; }
  int error() const;
  int fd() const { return fd_; }

 private:
  void append_slow(const char* p, std::size_t n);
  char* extend_slow(std::size_t n);

  int fd_;
  std::size_t cap_;
  bool owns_;
  std::string buf_;  // capacity reserved on first use: most per-rank files stay small
  int error_ = 0;
  std::unique_ptr<WriteBehind> behind_;
};

}  // namespace ferry
