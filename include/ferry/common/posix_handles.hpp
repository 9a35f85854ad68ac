#pragma once
/// \file
/// Owners for the POSIX resources ferry opens outside asio: file descriptors and directory
/// streams. Each closes on every path out of its scope, errors and early returns included.

#include <dirent.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <utility>

namespace ferry {

/// Owns a file descriptor (-1: none), so no error path leaks one and none is closed twice
/// (a second close may hit an fd the number was reused for). Move-only.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(std::exchange(other.fd_, -1));
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  /// Closes the descriptor held (if any) and holds `fd` instead. close(2) is not retried
  /// on EINTR: on Linux the fd is released either way.
  void reset(int fd = -1) noexcept {
    if (fd_ >= 0 && fd_ != fd) ::close(fd_);
    fd_ = fd;
  }
  /// Gives the descriptor up without closing it (to an owner that closes it, e.g. asio).
  int release() noexcept { return std::exchange(fd_, -1); }

 private:
  int fd_ = -1;
};

struct DirCloser {
  void operator()(DIR* d) const { ::closedir(d); }
};
/// Owns a directory stream (opendir / closedir).
using DirPtr = std::unique_ptr<DIR, DirCloser>;

/// opendir(path), owned; null with errno set when it cannot be opened.
inline DirPtr open_dir(const std::string& path) { return DirPtr(::opendir(path.c_str())); }

/// A stream over the directory open at `fd` (a dup of it: `fd` stays the caller's, and its
/// offset is not moved), owned; null when it cannot be had.
inline DirPtr open_dir_at(int fd) {
  const int again = ::dup(fd);
  if (again < 0) return nullptr;
  DIR* d = ::fdopendir(again);
  if (d == nullptr) ::close(again);
  return DirPtr(d);
}

}  // namespace ferry
