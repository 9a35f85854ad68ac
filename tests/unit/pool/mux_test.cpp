// The pool's framing: frames of every type back as they went, whatever the pieces the bytes
// arrive in; acknowledgements; corrupt streams refused (a length out of bounds, an unknown type).
#include "ferry/pool/mux.hpp"

#include <gtest/gtest.h>

namespace ferry {
namespace {

std::vector<MuxFrame> read_all(MuxReader& r) {
  std::vector<MuxFrame> out;
  for (;;) {
    auto f = r.next();
    EXPECT_TRUE(f.ok()) << f.error().message;
    if (!f.ok() || !*f) return out;
    out.push_back(std::move(**f));
  }
}

TEST(Mux, FramesComeBackAsSentWhateverThePieces) {
  const std::string big(300000, 'x');
  std::string bytes = encode_mux(MuxType::kHello, 0, "ferryd-pool 1 h 7") +
                      encode_mux(MuxType::kOpen, 3, "ferryrun-12") +
                      encode_mux(MuxType::kData, 3, big) +
                      encode_mux(MuxType::kStderr, 3, "oops\n") +
                      encode_mux(MuxType::kData, 4, "") + encode_mux(MuxType::kClose, 3, "why");
  for (size_t piece : {bytes.size(), size_t{1}, size_t{7}, size_t{4096}}) {
    MuxReader r;
    std::vector<MuxFrame> got;
    for (size_t off = 0; off < bytes.size(); off += piece) {
      r.feed(std::string_view(bytes).substr(off, piece));
      for (auto& f : read_all(r)) got.push_back(std::move(f));
    }
    ASSERT_EQ(got.size(), 6U) << "pieces of " << piece;
    EXPECT_EQ(got[0].type, MuxType::kHello);
    EXPECT_EQ(got[0].payload, "ferryd-pool 1 h 7");
    EXPECT_EQ(got[1].type, MuxType::kOpen);
    EXPECT_EQ(got[1].stream, 3U);
    EXPECT_EQ(got[2].payload, big);
    EXPECT_EQ(got[3].type, MuxType::kStderr);
    EXPECT_EQ(got[4].stream, 4U);
    EXPECT_TRUE(got[4].payload.empty());
    EXPECT_EQ(got[5].type, MuxType::kClose);
    EXPECT_EQ(got[5].payload, "why");
  }
}

TEST(Mux, AcknowledgementsCarrySixtyFourBits) {
  MuxReader r;
  r.feed(encode_mux_ack(9, (std::uint64_t{5} << 32) + 17));
  auto f = r.next();
  ASSERT_TRUE(f.ok() && *f);
  EXPECT_EQ((*f)->type, MuxType::kAck);
  EXPECT_EQ((*f)->stream, 9U);
  EXPECT_EQ(decode_mux_ack((*f)->payload), (std::uint64_t{5} << 32) + 17);
  EXPECT_FALSE(decode_mux_ack("1234567").has_value());
}

TEST(Mux, TheOpenAnswerGoesBothWays) {
  const std::string line = encode_open_answer(OpenAnswer{"10.0.0.2", "", "node1:22", "warm"});
  EXPECT_EQ(line, "ok 10.0.0.2 - node1:22 warm\n");
  auto a = parse_open_answer(line.substr(0, line.size() - 1));
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->peer, "10.0.0.2");
  EXPECT_EQ(a->local, "");
  EXPECT_EQ(a->describe, "node1:22");
  EXPECT_EQ(a->how, "warm");
  EXPECT_FALSE(parse_open_answer("no node1: cannot reach it now").has_value());
  EXPECT_FALSE(parse_open_answer("ok a b c").has_value());
}

TEST(Mux, ACorruptStreamIsRefused) {
  {
    MuxReader r;
    r.feed(std::string("\x02\x00\x00\x00\x03\x00", 6));  // length 2: shorter than a header
    auto f = r.next();
    ASSERT_FALSE(f.ok());
    EXPECT_NE(f.error().message.find("a frame of 2 bytes"), std::string::npos);
  }
  {
    MuxReader r;
    r.feed(std::string("\xff\xff\xff\x7f", 4));  // 2 GiB
    EXPECT_FALSE(r.next().ok());
  }
  {
    MuxReader r;
    std::string f = encode_mux(MuxType::kData, 1, "x");
    f[4] = 42;
    r.feed(f);
    auto got = r.next();
    ASSERT_FALSE(got.ok());
    EXPECT_NE(got.error().message.find("unknown frame type 42"), std::string::npos);
  }
}

TEST(Mux, ManySmallFramesKeepTheBufferSmall) {
  MuxReader r;
  std::string payload(1000, 'p');
  size_t seen = 0;
  for (int i = 0; i < 5000; ++i) {
    r.feed(encode_mux(MuxType::kData, static_cast<std::uint32_t>(i), payload));
    for (auto& f : read_all(r)) {
      EXPECT_EQ(f.stream, seen);
      ++seen;
    }
  }
  EXPECT_EQ(seen, 5000U);
}

}  // namespace
}  // namespace ferry
