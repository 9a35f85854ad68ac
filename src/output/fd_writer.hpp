#pragma once
/// \file
/// A buffered writer on one fd, writing itself or through a WriteBehind.

#include <cstddef>
#include <cstring>
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

  // The hot path is a bounds check and a memcpy, inline: the console appends a tag and a
  // line per line of output (std::string::append, out of line, cost a fifth of the front
  // end's CPU with tags).
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
  /// Room for `n` more bytes at the end of the buffer, which the caller fills, all of them;
  /// the buffer is flushed first when they do not fit. nullptr when `n` is larger than a
  /// buffer or after an error (append() then does the right thing).
  char* extend(std::size_t n) {
    if (n > cap_ - size_ || !buf_ || error_ != 0) return extend_slow(n);
    char* at = buf_.get() + size_;
    size_ += n;
    return at;
  }
  /// Gives back the last `n` bytes of what extend() handed out (scratch room the caller
  /// wrote past its data).
  void shrink(std::size_t n) { size_ -= n; }
  /// Writes the buffer out, or hands it to the WriteBehind without waiting.
  void flush();

  /// From now on writes never wait for the fd's reader: what it does not take at once a
  /// thread writes (see WriteBehind); `wake` as there.
  void start_behind(std::function<void()> wake);
  /// Waits until the thread wrote everything, then writes directly again.
  void stop_behind();
  WriteBehind* behind() const { return behind_.get(); }

  /// Bytes in the buffer.
  std::size_t size() const { return size_; }
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
  std::unique_ptr<char[]> buf_;  // cap_ bytes, allocated on first use: most per-rank files
  std::size_t size_ = 0;         // stay small
  int error_ = 0;
  std::unique_ptr<WriteBehind> behind_;
};

}  // namespace ferry
