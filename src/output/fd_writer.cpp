#include "fd_writer.hpp"

#include <unistd.h>

#include <algorithm>
#include <utility>

namespace ferry {

FdWriter::FdWriter(int fd, std::size_t capacity, bool owns_fd)
    : fd_(fd), cap_(std::max<std::size_t>(capacity, 1)), owns_(owns_fd) {}

FdWriter::~FdWriter() {
  behind_.reset();
  if (owns_ && fd_ >= 0) ::close(fd_);
}

void FdWriter::flush() {
  if (buf_.empty()) return;
  if (error() != 0) {
    buf_.clear();
    return;
  }
  if (behind_) {
    behind_->write(buf_);  // empties buf_, keeping a buffer's capacity where it can
  } else {
    error_ = write_all(fd_, buf_.data(), buf_.size());
    buf_.clear();
  }
}

void FdWriter::start_behind(std::function<void()> wake) {
  flush();
  behind_ = std::make_unique<WriteBehind>(fd_, cap_, std::move(wake));
}

void FdWriter::stop_behind() {
  if (!behind_) return;
  flush();
  const int err = behind_->finish();
  behind_.reset();
  if (error_ == 0) error_ = err;
}

int FdWriter::error() const {
  if (error_ != 0) return error_;
  return behind_ ? behind_->error() : 0;
}

void FdWriter::append_slow(const char* p, std::size_t n) {
  if (error() != 0) return;
  if (n > cap_ - buf_.size()) flush();
  if (n >= cap_) {
    if (behind_) {
      behind_->write(p, n);
    } else if (error_ == 0) {
      error_ = write_all(fd_, p, n);
    }
    return;
  }
  if (buf_.capacity() < cap_) buf_.reserve(cap_);
  buf_.append(p, n);
}

char* FdWriter::extend_slow(std::size_t n) {
  if (n > cap_ || error() != 0) return nullptr;
  if (n > cap_ - buf_.size()) flush();
  if (buf_.capacity() < cap_) buf_.reserve(cap_);
  const std::size_t old = buf_.size();
  buf_.resize(old + n);
  return buf_.data() + old;
}

}  // namespace ferry
