#pragma once
/// \file
/// Frames queued for one writer in a single contiguous block, so a burst of frames leaves
/// in one write, and a rank's output can be read from its pipe straight into its frame.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "ferry/wire/messages.hpp"

namespace ferry::wire {

/// A growable byte block of whole frames. Memory is malloc'd and never zero-filled, so
/// room that is reserved but not read into costs address space, not resident pages.
class FrameBatch {
 public:
  FrameBatch() = default;
  ~FrameBatch();
  FrameBatch(FrameBatch&& other) noexcept;
  FrameBatch& operator=(FrameBatch&& other) noexcept;
  FrameBatch(const FrameBatch&) = delete;
  FrameBatch& operator=(const FrameBatch&) = delete;

  /// Appends one encoded frame.
  void append(std::string_view frame);
  /// Room for the data of an Output frame of at most `max` bytes. Read into it, then call
  /// commit_output() with the count (or nothing, to drop it). Valid until the next call.
  std::span<char> output_room(size_t max);
  /// Turns the first `n` bytes of the last output_room() into one Output frame, the same
  /// bytes encode(Output{rank, stream, data}) makes.
  void commit_output(int32_t rank, uint8_t stream, size_t n);
  /// Appends only the header of an Output frame whose `n` data bytes the writer sends
  /// right after the batch, from elsewhere (a spliced pipe).
  void append_output_header(int32_t rank, uint8_t stream, size_t n);

  std::string_view bytes() const { return {data_, size_}; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  char* room(size_t n);

  char* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace ferry::wire
