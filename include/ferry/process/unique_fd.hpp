#pragma once
/// \file
/// File descriptors that close themselves: one owner per fd, so no error path leaks one and
/// no fd is closed twice (a second close may hit an fd the number was reused for).

#include <utility>

#include "ferry/common/result.hpp"

namespace ferry {

/// Owns one file descriptor (or none: -1) and closes it when destroyed or reset.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) noexcept : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  /// Gives the fd up without closing it (to an owner that closes it, e.g. an asio object).
  int release() noexcept { return std::exchange(fd_, -1); }
  /// Closes the fd held, if any, and holds `fd` instead.
  void reset(int fd = -1) noexcept;

 private:
  int fd_ = -1;
};

/// Both ends of a pipe.
struct Pipe {
  UniqueFd read;
  UniqueFd write;
};

/// A pipe whose ends are close-on-exec (a child gets an end only as one of its stdio fds or
/// through SpawnRequest::keep_fds). Error: "pipe: <reason>".
Result<Pipe> make_pipe();

/// /dev/null opened read-only and close-on-exec; an empty UniqueFd if it cannot be opened.
UniqueFd open_dev_null();

}  // namespace ferry
