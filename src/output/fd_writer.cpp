#include "fd_writer.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>

namespace ferry {

FdWriter::FdWriter(int fd, std::size_t capacity, bool owns_fd)
    : fd_(fd), cap_(std::max<std::size_t>(capacity, 1)), owns_(owns_fd) {}

FdWriter::~FdWriter() {
  behind_.reset();
  if (owns_ && fd_ >= 0) ::close(fd_);
}

void FdWriter::flush() {
  if (size_ == 0) return;
  if (error() == 0) {
    if (behind_) {
      behind_->write(buf_.get(), size_);  // copies only what the fd does not take at once
    } else {
      error_ = write_all(fd_, buf_.get(), size_);
    }
  }
  size_ = 0;
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
  if (n > cap_ - size_) flush();
  if (n >= cap_) {
    if (behind_) {
      behind_->write(p, n);
    } else if (error_ == 0) {
      error_ = write_all(fd_, p, n);
    }
    return;
  }
  if (!buf_) buf_ = std::make_unique_for_overwrite<char[]>(cap_);
  std::memcpy(buf_.get() + size_, p, n);
  size_ += n;
}

char* FdWriter::extend_slow(std::size_t n) {
  if (n > cap_ || error() != 0) return nullptr;
  if (n > cap_ - size_) flush();
  if (!buf_) buf_ = std::make_unique_for_overwrite<char[]>(cap_);
  char* at = buf_.get() + size_;
  size_ += n;
  return at;
}

}  // namespace ferry
