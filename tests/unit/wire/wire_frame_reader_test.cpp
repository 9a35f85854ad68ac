// FrameReader::feed_borrowed: frames cut anywhere come out as with feed(), and a frame is
// never read from the caller's bytes after they changed.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "ferry/wire/frame.hpp"

namespace ferry::wire {
namespace {

TEST(FrameReaderBorrowed, AnySplitGivesTheSameFrames) {
  std::mt19937 rng(11);
  std::string stream;
  std::vector<Frame> want;
  for (int i = 0; i < 300; ++i) {
    Frame f{static_cast<uint8_t>(i % 7),
            std::string(rng() % 3000, static_cast<char>('a' + i % 26))};
    stream += encode_frame(f.type, f.payload);
    want.push_back(f);
  }
  for (std::size_t chunk : {1, 3, 5, 64, 1000, 4096, 100000}) {
    FrameReader r;
    std::vector<Frame> got;
    std::string piece;  // the caller's buffer: overwritten after every feed's frames
    for (std::size_t at = 0; at < stream.size(); at += chunk) {
      piece.assign(stream, at, chunk);
      r.feed_borrowed(piece);
      for (;;) {
        auto f = r.next_view();
        ASSERT_TRUE(f) << f.error().message;
        if (!*f) break;
        got.push_back((*f)->to_frame());
      }
      piece.assign(piece.size(), '#');
    }
    ASSERT_EQ(got.size(), want.size()) << "chunks of " << chunk;
    for (std::size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(got[i].type, want[i].type);
      ASSERT_EQ(got[i].payload, want[i].payload) << "frame " << i << ", chunks of " << chunk;
    }
    EXPECT_EQ(r.buffered(), 0u);
  }
}

TEST(FrameReaderBorrowed, CorruptLengthFailsAsWithFeed) {
  FrameReader r;
  std::string bad("\0\0\0\x7f", 4);  // 2 GiB frame
  r.feed_borrowed(bad);
  auto f = r.next_view();
  EXPECT_FALSE(f);
}

}  // namespace
}  // namespace ferry::wire
