#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "ferry/wire/frame_batch.hpp"
#include "ferry/wire/messages.hpp"

namespace ferry::wire {
namespace {

std::string output_frame(int32_t rank, uint8_t stream, const std::string& data) {
  Output o;
  o.rank = rank;
  o.stream = stream;
  o.data = data;
  return encode(o);
}

void put_output(FrameBatch& b, int32_t rank, uint8_t stream, const std::string& data,
                size_t room = 64) {
  auto r = b.output_room(std::max(room, data.size()));
  ASSERT_GE(r.size(), data.size());
  std::memcpy(r.data(), data.data(), data.size());
  b.commit_output(rank, stream, data.size());
}

TEST(FrameBatch, OutputInPlaceIsTheEncodedFrame) {
  FrameBatch b;
  put_output(b, 7, 2, "hello\n");
  EXPECT_EQ(b.bytes(), output_frame(7, 2, "hello\n"));
  EXPECT_EQ(kOutputHeader + 6, b.size());
}

TEST(FrameBatch, FramesKeepTheirOrderAndDecode) {
  FrameBatch b;
  b.append(encode(Heartbeat{}));
  put_output(b, 0, 1, "a\n");
  put_output(b, -1, 2, std::string(100000, 'x'));  // forces growth mid-batch
  b.append(encode(Exited{3, 0, 9, {}}));
  put_output(b, 1, 1, "", 16);  // empty room: a zero-length frame is still well formed

  FrameReader r;
  r.feed(b.bytes());
  std::vector<Frame> frames;
  for (;;) {
    auto f = r.next();
    ASSERT_TRUE(f);
    if (!*f) break;
    frames.push_back(**f);
  }
  ASSERT_EQ(5u, frames.size());
  EXPECT_EQ(static_cast<uint8_t>(MsgType::kHeartbeat), frames[0].type);
  auto o1 = decode<OutputView>(frames[1]);
  ASSERT_TRUE(o1);
  EXPECT_EQ("a\n", o1->data);
  auto o2 = decode<OutputView>(frames[2]);
  ASSERT_TRUE(o2);
  EXPECT_EQ(-1, o2->rank);
  EXPECT_EQ(2, o2->stream);
  EXPECT_EQ(std::string(100000, 'x'), o2->data);
  auto e = decode<Exited>(frames[3]);
  ASSERT_TRUE(e);
  EXPECT_EQ(9, e->signal);
  auto o4 = decode<OutputView>(frames[4]);
  ASSERT_TRUE(o4);
  EXPECT_EQ("", o4->data);
}

TEST(FrameBatch, UncommittedRoomIsDropped) {
  FrameBatch b;
  b.append(encode(Done{}));
  auto room = b.output_room(1024);
  std::memset(room.data(), 'z', room.size());
  EXPECT_EQ(encode(Done{}), b.bytes());  // nothing committed: the batch is unchanged
  b.commit_output(2, 1, 3);
  EXPECT_EQ(encode(Done{}) + output_frame(2, 1, "zzz"), b.bytes());
}

TEST(FrameBatch, MovesOwnership) {
  FrameBatch a;
  a.append(encode(Done{}));
  FrameBatch b = std::move(a);
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(encode(Done{}), b.bytes());
  a = std::move(b);
  EXPECT_EQ(encode(Done{}), a.bytes());
}

}  // namespace
}  // namespace ferry::wire

namespace ferry::wire {
namespace {

TEST(FrameReaderView, ViewsPointIntoTheReaderUntilTheNextFeed) {
  Output o{3, 2, "abc\n"};
  std::string stream = encode(o) + encode(Done{});
  FrameReader r;
  r.feed(stream.substr(0, 7));  // a partial frame gives nothing yet
  auto none = r.next_view();
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
  r.feed(stream.substr(7));
  auto v = r.next_view();
  ASSERT_TRUE(v && *v);
  auto out = decode<OutputView>(**v);
  ASSERT_TRUE(out);
  EXPECT_EQ(3, out->rank);
  EXPECT_EQ(2, out->stream);
  EXPECT_EQ("abc\n", out->data);
  auto done = r.next_view();
  ASSERT_TRUE(done && *done);
  EXPECT_EQ(static_cast<uint8_t>(MsgType::kDone), (*done)->type);
  EXPECT_EQ(0u, r.buffered());
}

TEST(FrameReaderView, OutputViewRefusesWrongTypeAndTruncation) {
  std::string f = encode(Output{1, 1, "hello"});
  FrameReader r;
  r.feed(f);
  auto v = r.next_view();
  ASSERT_TRUE(v && *v);
  FrameView cut{(*v)->type, (*v)->payload.substr(0, (*v)->payload.size() - 1)};
  EXPECT_FALSE(decode<OutputView>(cut));
  FrameView wrong{static_cast<uint8_t>(MsgType::kLog), (*v)->payload};
  EXPECT_FALSE(decode<OutputView>(wrong));
  FrameView bad_stream = **v;
  std::string payload(bad_stream.payload);
  payload[4] = 3;  // stream id 3 does not exist
  bad_stream.payload = payload;
  EXPECT_FALSE(decode<OutputView>(bad_stream));
}

}  // namespace
}  // namespace ferry::wire
