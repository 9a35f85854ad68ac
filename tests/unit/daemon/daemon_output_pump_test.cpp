#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "ferry/daemon/output_pump.hpp"
#include "ferry/transport/sealed_records.hpp"
#include "ferry/wire/messages.hpp"

namespace ferry {
namespace {

struct Pipe {
  int r = -1, w = -1;
  Pipe() {
    int fds[2];
    EXPECT_EQ(0, ::pipe2(fds, O_CLOEXEC));
    r = fds[0];
    w = fds[1];
  }
  ~Pipe() {
    if (r >= 0) ::close(r);
    if (w >= 0) ::close(w);
  }
};

// Everything readable now from fd (non-blocking).
std::string read_now(int fd) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  std::string s;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) s.append(buf, static_cast<size_t>(n));
  return s;
}

std::vector<wire::Frame> frames_of(const std::string& bytes) {
  wire::FrameReader r;
  r.feed(bytes);
  std::vector<wire::Frame> v;
  for (;;) {
    auto f = r.next();
    EXPECT_TRUE(f);
    if (!f || !*f) break;
    v.push_back(**f);
  }
  EXPECT_EQ(0u, r.buffered()) << "a partial frame is left";
  return v;
}

TEST(OutputPump, FramesAndSplicedPipeBytesKeepTheirOrder) {
  asio::io_context io;
  Pipe out, rank;
  int idle = 0, done = 0;
  OutputPump pump(io, out.w, {[&] { ++idle; }, [] { FAIL() << "broken"; }});
  ASSERT_TRUE(pump.can_splice());
  ASSERT_EQ(5, ::write(rank.w, "hello", 5));
  pump.send(wire::encode(wire::Log{"first"}));
  pump.forward(rank.r, 3, StreamId::kStderr, 5, [&] { ++done; });
  pump.send(wire::encode(wire::Log{"last"}));
  io.poll();
  EXPECT_TRUE(pump.idle());
  EXPECT_EQ(1, done);
  EXPECT_GE(idle, 1);
  auto f = frames_of(read_now(out.r));
  ASSERT_EQ(3u, f.size());
  EXPECT_EQ("first", wire::decode<wire::Log>(f[0])->line);
  auto o = wire::decode<wire::OutputView>(f[1]);
  ASSERT_TRUE(o);
  EXPECT_EQ(3, o->rank);
  EXPECT_EQ(static_cast<uint8_t>(StreamId::kStderr), o->stream);
  EXPECT_EQ("hello", o->data);
  EXPECT_EQ("last", wire::decode<wire::Log>(f[2])->line);
}

TEST(OutputPump, GrowsAPipeStreamToOneMebibyte) {
  asio::io_context io;
  Pipe out;
  OutputPump pump(io, out.w, {nullptr, nullptr});
  EXPECT_GE(::fcntl(out.w, F_GETPIPE_SZ), 1 << 20);
}

TEST(OutputPump, AFullStreamHoldsTheRestUntilItDrains) {
  asio::io_context io;
  Pipe out, rank;
  const std::string data(60000, 'x');
  ::fcntl(rank.w, F_SETFL, O_NONBLOCK);
  ASSERT_EQ(static_cast<ssize_t>(data.size()), ::write(rank.w, data.data(), data.size()));
  int done = 0;
  OutputPump pump(io, out.w, {nullptr, [] { FAIL() << "broken"; }});
  ASSERT_GT(::fcntl(out.w, F_SETPIPE_SZ, 4096), 0);  // after the pump grew it
  pump.forward(rank.r, 0, StreamId::kStdout, data.size(), [&] { ++done; });
  pump.send(wire::encode(wire::Done{}));
  io.poll();
  EXPECT_FALSE(pump.idle()) << "a 4 KiB stream cannot take 60 KB at once";
  EXPECT_EQ(0, done);
  std::string got;
  for (int i = 0; i < 1000 && !pump.idle(); ++i) {
    got += read_now(out.r);
    io.run_for(std::chrono::milliseconds(2));  // a full pipe is tried again after 1 ms
  }
  got += read_now(out.r);
  ASSERT_TRUE(pump.idle());
  EXPECT_EQ(1, done);
  EXPECT_EQ(0u, pump.queued());
  auto f = frames_of(got);
  ASSERT_EQ(2u, f.size());
  EXPECT_EQ(data, wire::decode<wire::OutputView>(f[0])->data);
  EXPECT_EQ(static_cast<uint8_t>(wire::MsgType::kDone), f[1].type);
}

TEST(OutputPump, CopyingPathCommitsReadBytesAsFrames) {
  asio::io_context io;
  Pipe out;
  OutputPump pump(io, out.w, {nullptr, nullptr});
  auto room = pump.room(16);
  std::memcpy(room.data(), "abc", 3);
  pump.commit(7, StreamId::kStdout, 3);
  io.poll();
  auto f = frames_of(read_now(out.r));
  ASSERT_EQ(1u, f.size());
  EXPECT_EQ("abc", wire::decode<wire::OutputView>(f[0])->data);
}

TEST(OutputPump, ABrokenStreamIsReportedAndDropsWhatWasQueued) {
  ::signal(SIGPIPE, SIG_IGN);
  asio::io_context io;
  Pipe out, rank;
  ASSERT_EQ(2, ::write(rank.w, "hi", 2));
  ::close(out.r);
  out.r = -1;
  int broken = 0, done = 0;
  OutputPump pump(io, out.w, {nullptr, [&] { ++broken; }});
  pump.forward(rank.r, 0, StreamId::kStdout, 2, [&] { ++done; });
  io.poll();
  EXPECT_EQ(1, broken);
  EXPECT_EQ(1, done) << "the owner of a dropped frame's pipe gets it back";
  EXPECT_TRUE(pump.idle());
  pump.send(wire::encode(wire::Done{}));  // after breaking: ignored
  io.poll();
  EXPECT_EQ(1, broken);
}

// A sealed stream that was full while frames piled up: each record still holds whole
// frames (the front end never joins one from two records), a frame larger than a record
// is cut over several, and every byte arrives in order.
TEST(OutputPump, SealedRecordsEndAtFrameEnds) {
  asio::io_context io;
  Pipe out;
  OutputPump pump(io, out.w, {nullptr, [] { FAIL() << "broken"; }});
  const std::string key(kRouteKeySize, 'k');
  auto sealer = RecordSealer::create(key);
  ASSERT_TRUE(sealer) << sealer.error().message;
  ASSERT_GT(::fcntl(out.w, F_SETPIPE_SZ, 4096), 0);
  pump.seal_with(std::move(*sealer), "preamble");
  EXPECT_EQ(pump.frame_data_limit(size_t{1} << 20), kMaxRecord - wire::kOutputHeader);
  // Frames of 100 KB (not a divisor of a record), then one of 600 KB, then small ones.
  std::string want;
  auto put = [&](char c, size_t n) {
    auto room = pump.room(n);
    std::memset(room.data(), c, n);
    pump.commit(1, StreamId::kStdout, n);
    want += std::string(n, c);
  };
  for (int i = 0; i < 12; ++i) put(static_cast<char>('a' + i), 100000);
  put('z', 600000);
  for (int i = 0; i < 50; ++i) put(static_cast<char>('A' + i % 26), 1000 + i);
  std::string got;
  for (int i = 0; i < 5000 && !pump.idle(); ++i) {
    got += read_now(out.r);
    io.run_for(std::chrono::milliseconds(1));
  }
  got += read_now(out.r);
  ASSERT_TRUE(pump.idle());

  auto opener = RecordOpener::create(key);
  ASSERT_TRUE(opener);
  std::string joined;
  wire::FrameReader reader;
  size_t at = 0, records = 0, cut = 0;
  while (at < got.size()) {
    std::string_view plain;
    auto took = opener->open(std::span<char>(got.data() + at, got.size() - at), plain);
    ASSERT_TRUE(took) << took.error().message;
    ASSERT_GT(*took, 0u) << "the stream ends inside a record";
    at += *took;
    if (records++ == 0) {
      EXPECT_EQ(plain, "preamble");
      continue;
    }
    EXPECT_LE(plain.size(), kMaxRecord);
    reader.feed(plain);
    while (true) {
      auto f = reader.next_view();
      ASSERT_TRUE(f) << f.error().message;
      if (!*f) break;
    }
    if (reader.buffered() != 0) ++cut;  // this record ended inside a frame
    joined += plain;
  }
  EXPECT_EQ(cut, 2u) << "only the 600 KB frame is cut, over three records";
  std::string data;
  for (const auto& f : frames_of(joined)) data += wire::decode<wire::OutputView>(f)->data;
  EXPECT_TRUE(data == want) << "bytes lost or out of order";
}

}  // namespace
}  // namespace ferry
