#include "ferry/wire/frame.hpp"

#include <algorithm>
#include <string>

#include "ferry/wire/codec.hpp"

namespace ferry::wire {

std::string encode_frame(uint8_t type, std::string_view payload) {
  if (!frame_fits(payload.size()))
    throw FrameTooLarge("frame of type " + std::to_string(type) + " would be " +
                        std::to_string(payload.size() + 1) + " bytes, over the limit of " +
                        std::to_string(kMaxFrame) + " bytes (16 MiB)");
  Encoder e;
  e.bytes().reserve(5 + payload.size());
  e.u32(static_cast<uint32_t>(payload.size() + 1));
  e.u8(type);
  e.raw(payload);
  return e.take();
}

void FrameReader::feed(std::string_view bytes) {
  ext_ = {};
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

void FrameReader::feed_borrowed(std::string_view bytes) {
  ext_ = {};
  // A frame begun earlier is completed in the buffer; the rest stays where it is.
  while (!bytes.empty() && pos_ < buf_.size()) {
    const size_t have = buf_.size() - pos_;
    size_t want = have < 4 ? 4 - have : 0;
    if (want == 0) {
      const uint32_t len = Decoder(std::string_view(buf_).substr(pos_, 4)).u32();
      if (len == 0 || len > kMaxFrame || have >= 4 + static_cast<size_t>(len)) break;
      want = 4 + len - have;
    }
    const size_t take = std::min(want, bytes.size());
    feed(bytes.substr(0, take));
    bytes.remove_prefix(take);
  }
  if (pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  }
  ext_ = bytes;
}

// The frame at `pos` in `bytes`, if whole; moves `pos` past it.
Result<std::optional<FrameView>> FrameReader::view_in(std::string_view bytes, size_t& pos) {
  const size_t avail = bytes.size() - pos;
  if (avail < 4) return std::optional<FrameView>{};
  Decoder d(bytes.substr(pos, 4));
  uint32_t len = d.u32();
  if (len == 0 || len > kMaxFrame) {
    failed_ = true;
    return make_error("protocol stream is corrupt (frame length " + std::to_string(len) + ")");
  }
  if (avail < 4 + static_cast<size_t>(len)) return std::optional<FrameView>{};
  FrameView f;
  f.type = static_cast<uint8_t>(bytes[pos + 4]);
  f.payload = bytes.substr(pos + 5, len - 1);
  pos += 4 + len;
  return std::optional<FrameView>{f};
}

Result<std::optional<FrameView>> FrameReader::next_view() {
  if (failed_) return make_error("protocol stream is corrupt");
  // The bytes stay where they are until the next feed(), which compacts them away.
  if (pos_ < buf_.size() || ext_.empty()) {
    auto f = view_in(buf_, pos_);
    if (!f || *f || ext_.empty() || pos_ < buf_.size()) return f;
  }
  size_t used = 0;
  auto f = view_in(ext_, used);
  if (f && !*f) {
    feed(ext_);  // an unfinished frame: kept (feed() forgets ext_)
    return f;
  }
  ext_.remove_prefix(used);
  return f;
}

Result<std::optional<Frame>> FrameReader::next() {
  auto v = next_view();
  if (!v) return v.error();
  if (!*v) return std::optional<Frame>{};
  return std::optional<Frame>{(*v)->to_frame()};
}

}  // namespace ferry::wire
