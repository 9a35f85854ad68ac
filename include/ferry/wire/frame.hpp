#pragma once
/// \file
/// Frames: `u32 length | u8 type | payload`, length counting type + payload.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "ferry/common/result.hpp"

namespace ferry::wire {

/// Largest frame either side accepts; anything bigger means a corrupt or foreign stream.
inline constexpr uint32_t kMaxFrame = 16u << 20;

/// One decoded frame.
struct Frame {
  uint8_t type = 0;
  std::string payload;
};

/// A frame still inside FrameReader's buffer: valid until the reader is fed again (after
/// feed_borrowed(), until the next call to next_view()).
struct FrameView {
  uint8_t type = 0;
  std::string_view payload;
  Frame to_frame() const { return Frame{type, std::string(payload)}; }
};

/// Encodes one frame. A payload the other side would refuse (type and payload over
/// kMaxFrame) is never sent: it throws FrameTooLarge, naming the type and the size. Callers
/// that build frames from user input (a host's HostSpec) check frame_fits() first.
std::string encode_frame(uint8_t type, std::string_view payload);

/// Whether a frame of `payload_size` payload bytes fits kMaxFrame.
constexpr bool frame_fits(size_t payload_size) { return payload_size < kMaxFrame; }

/// Thrown by encode_frame for a payload over the frame limit: a bug or an unchecked input,
/// never a frame the other side would call corrupt.
class FrameTooLarge : public std::length_error {
 public:
  using std::length_error::length_error;
};

/// Cuts a byte stream into frames. Feed bytes as they arrive, then pop frames until none.
class FrameReader {
 public:
  /// Appends received bytes.
  void feed(std::string_view bytes);
  /// As feed(), without copying what it need not: frames wholly inside `bytes` are
  /// returned as views into it, only the start of an unfinished frame is kept. `bytes`
  /// must stay valid until next_view() returned no frame; a feed before that drops what
  /// is left of it.
  void feed_borrowed(std::string_view bytes);
  /// Next complete frame, nothing if incomplete, or an Error if the stream is corrupt
  /// (oversized length); after an error the reader stays failed.
  Result<std::optional<Frame>> next();
  /// As next(), without copying the payload out of the reader.
  Result<std::optional<FrameView>> next_view();
  /// Bytes received but not yet returned as frames.
  size_t buffered() const { return buf_.size() - pos_ + ext_.size(); }

 private:
  Result<std::optional<FrameView>> view_in(std::string_view bytes, size_t& pos);

  std::string buf_;
  size_t pos_ = 0;
  std::string_view ext_;  // feed_borrowed()'s bytes not returned yet
  bool failed_ = false;
};

}  // namespace ferry::wire
