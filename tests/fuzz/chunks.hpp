#pragma once
// Shared by the stream fuzzers: the first bytes of an input say where to cut the rest into
// the pieces a socket might deliver, so one input checks a parser against itself, fed
// whole and fed in pieces.
//
// Layout: byte 0 = n (n % 16 piece sizes follow), then n bytes of piece sizes, used in turn
// and cyclically over the stream; a size of 0 feeds an empty piece. What follows is the
// stream.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace ferry_fuzz {

struct ChunkedInput {
  std::vector<std::size_t> sizes;  // never empty; at least one size is nonzero
  std::string_view stream;
};

// Consumes the chunking header from the front of `in` (which the caller may have trimmed
// of its own leading option bytes).
inline ChunkedInput take_chunking(std::string_view in) {
  ChunkedInput c;
  std::size_t n = in.empty() ? 0 : static_cast<uint8_t>(in[0]) % 16;
  if (!in.empty()) in.remove_prefix(1);
  bool any = false;
  for (std::size_t i = 0; i < n && !in.empty(); ++i) {
    c.sizes.push_back(static_cast<uint8_t>(in[0]));
    any = any || c.sizes.back() != 0;
    in.remove_prefix(1);
  }
  if (!any) c.sizes.push_back(1);  // no header, or only empty pieces: one byte at a time
  c.stream = in;
  return c;
}

// Calls feed(piece) for consecutive pieces of `stream` cut as `sizes` says.
template <class Feed>
void for_each_piece(const ChunkedInput& c, Feed&& feed) {
  std::size_t at = 0;
  for (std::size_t i = 0; at < c.stream.size(); ++i) {
    std::size_t n = c.sizes[i % c.sizes.size()];
    if (n > c.stream.size() - at) n = c.stream.size() - at;
    feed(c.stream.substr(at, n));
    at += n;
  }
}

// True when `part` lies in `whole`: the parser never invents bytes.
inline bool within(std::string_view whole, std::string_view part) {
  return part.empty() || whole.find(part) != std::string_view::npos;
}

}  // namespace ferry_fuzz
