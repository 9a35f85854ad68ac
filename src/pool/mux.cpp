#include "ferry/pool/mux.hpp"

#include <algorithm>
#include <vector>

namespace ferry {

namespace {

void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::uint32_t get_u32(std::string_view in) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i)
    v = (v << 8) | static_cast<unsigned char>(in[static_cast<size_t>(i)]);
  return v;
}

}  // namespace

std::string encode_mux(MuxType type, std::uint32_t stream, std::string_view payload) {
  std::string out;
  out.reserve(9 + payload.size());
  put_u32(out, static_cast<std::uint32_t>(5 + payload.size()));
  out.push_back(static_cast<char>(type));
  put_u32(out, stream);
  out.append(payload);
  return out;
}

std::string encode_mux_ack(std::uint32_t stream, std::uint64_t bytes) {
  std::string p;
  put_u32(p, static_cast<std::uint32_t>(bytes & 0xffffffffU));
  put_u32(p, static_cast<std::uint32_t>(bytes >> 32));
  return encode_mux(MuxType::kAck, stream, p);
}

std::optional<std::uint64_t> decode_mux_ack(std::string_view payload) {
  if (payload.size() != 8) return std::nullopt;
  return std::uint64_t{get_u32(payload)} | (std::uint64_t{get_u32(payload.substr(4))} << 32);
}

std::string encode_open_answer(const OpenAnswer& a) {
  auto word = [](const std::string& w) { return w.empty() ? std::string("-") : w; };
  return "ok " + word(a.peer) + " " + word(a.local) + " " + word(a.describe) + " " + word(a.how) +
         "\n";
}

std::optional<OpenAnswer> parse_open_answer(std::string_view line) {
  std::vector<std::string> w;
  for (size_t pos = 0; pos <= line.size();) {
    const size_t sp = std::min(line.find(' ', pos), line.size());
    w.emplace_back(line.substr(pos, sp - pos));
    pos = sp + 1;
  }
  if (w.size() != 5 || w[0] != "ok") return std::nullopt;
  auto word = [](const std::string& s) { return s == "-" ? std::string() : s; };
  return OpenAnswer{word(w[1]), word(w[2]), word(w[3]), word(w[4])};
}

Result<std::optional<MuxFrame>> MuxReader::next() {
  const std::string_view rest = std::string_view(buf_).substr(off_);
  if (rest.size() < 4) return std::optional<MuxFrame>();
  const std::uint32_t len = get_u32(rest);
  if (len < 5 || len > kMuxMaxFrame)
    return make_error("pool stream: a frame of " + std::to_string(len) + " bytes");
  if (rest.size() < 4 + std::size_t{len}) return std::optional<MuxFrame>();
  const auto type = static_cast<unsigned char>(rest[4]);
  if (type < static_cast<unsigned char>(MuxType::kHello) ||
      type > static_cast<unsigned char>(MuxType::kClose))
    return make_error("pool stream: unknown frame type " + std::to_string(type));
  MuxFrame f;
  f.type = static_cast<MuxType>(type);
  f.stream = get_u32(rest.substr(5));
  f.payload.assign(rest.substr(9, len - 5));
  off_ += 4 + std::size_t{len};
  // Drop what was read once it is most of the buffer: amortised, no copy per frame.
  if (off_ > 65536 && off_ * 2 > buf_.size()) {
    buf_.erase(0, off_);
    off_ = 0;
  }
  return std::optional<MuxFrame>(std::move(f));
}

}  // namespace ferry
