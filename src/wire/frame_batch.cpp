#include "ferry/wire/frame_batch.hpp"

#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "ferry/wire/messages.hpp"

namespace ferry::wire {
namespace {

void put_output_header(char* h, int32_t rank, uint8_t stream, size_t n) {
  write_output_header(std::span<char, kOutputHeader>(h, kOutputHeader), rank, stream, n);
}

}  // namespace

FrameBatch::~FrameBatch() { std::free(data_); }

FrameBatch::FrameBatch(FrameBatch&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      capacity_(std::exchange(other.capacity_, 0)) {}

FrameBatch& FrameBatch::operator=(FrameBatch&& other) noexcept {
  if (this != &other) {
    std::free(data_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
  }
  return *this;
}

char* FrameBatch::room(size_t n) {
  if (capacity_ - size_ < n) {
    size_t want = capacity_ ? capacity_ : 256;
    while (want - size_ < n) want *= 2;
    char* p = static_cast<char*>(std::realloc(data_, want));
    if (!p) throw std::bad_alloc();
    data_ = p;
    capacity_ = want;
  }
  return data_ + size_;
}

void FrameBatch::append(std::string_view frame) {
  std::memcpy(room(frame.size()), frame.data(), frame.size());
  size_ += frame.size();
}

std::span<char> FrameBatch::output_room(size_t max) {
  return {room(kOutputHeader + max) + kOutputHeader, max};
}

void FrameBatch::commit_output(int32_t rank, uint8_t stream, size_t n) {
  put_output_header(data_ + size_, rank, stream, n);
  size_ += kOutputHeader + n;
}

void FrameBatch::append_output_header(int32_t rank, uint8_t stream, size_t n) {
  put_output_header(room(kOutputHeader), rank, stream, n);
  size_ += kOutputHeader;
}

}  // namespace ferry::wire
