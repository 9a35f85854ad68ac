#include "ferry/wire/frame.hpp"

#include "ferry/wire/codec.hpp"

namespace ferry::wire {

std::string encode_frame(uint8_t type, std::string_view payload) {
  Encoder e;
  e.bytes().reserve(5 + payload.size());
  e.u32(static_cast<uint32_t>(payload.size() + 1));
  e.u8(type);
  e.raw(payload);
  return e.take();
}

void FrameReader::feed(std::string_view bytes) {
  // Compact lazily so long streams of small frames do not shift the buffer every frame.
  if (pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  } else if (pos_ > 0 && pos_ >= buf_.size() / 2) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  buf_.append(bytes);
}

Result<std::optional<FrameView>> FrameReader::next_view() {
  if (failed_) return make_error("protocol stream is corrupt");
  size_t avail = buf_.size() - pos_;
  if (avail < 4) return std::optional<FrameView>{};
  Decoder d(std::string_view(buf_).substr(pos_, 4));
  uint32_t len = d.u32();
  if (len == 0 || len > kMaxFrame) {
    failed_ = true;
    return make_error("protocol stream is corrupt (frame length " + std::to_string(len) + ")");
  }
  if (avail < 4 + static_cast<size_t>(len)) return std::optional<FrameView>{};
  FrameView f;
  f.type = static_cast<uint8_t>(buf_[pos_ + 4]);
  f.payload = std::string_view(buf_).substr(pos_ + 5, len - 1);
  // The bytes stay where they are until the next feed(), which compacts them away.
  pos_ += 4 + len;
  return std::optional<FrameView>{f};
}

Result<std::optional<Frame>> FrameReader::next() {
  auto v = next_view();
  if (!v) return v.error();
  if (!*v) return std::optional<Frame>{};
  return std::optional<Frame>{(*v)->to_frame()};
}

}  // namespace ferry::wire
