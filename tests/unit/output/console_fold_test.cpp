// ConsoleOutput with fold on: alike lines of many ranks are printed once with their ranks,
// within the delay; each rank's lines keep their order; differing lines pass as usual.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "console_test_support.hpp"

namespace ferry {
namespace {

using namespace std::chrono_literals;
using namespace test_support;
using Clock = std::chrono::steady_clock;

struct Folding : Console {
  explicit Folding(int world, TagStyle tag = TagStyle::kHorovod) : Console(options(world, tag)) {
    out.set_steady_clock([this] { return t; });
  }
  static OutputOptions options(int world, TagStyle tag) {
    OutputOptions o;
    o.world_size = world;
    o.tag = tag;
    o.fold = true;
    return o;
  }
  Clock::time_point t = Clock::time_point() + 1h;
};

TEST(ConsoleFold, ALineEveryRankPrintsGoesOutOnceAtOnce) {
  Folding c(64);
  for (int r = 63; r >= 0; --r) c.out.write(r, StreamId::kStdout, "epoch 1 done\n");
  c.out.flush();
  EXPECT_EQ(c.cout.text(), "[0-63]<stdout>:epoch 1 done\n");
}

TEST(ConsoleFold, AFoldedLineNamesTheRanksAsRelabeled) {
  Folding c(6);
  c.out.relabel(4, 2);  // elastic: workers 4 and 5 hold ranks 2 and 3 now
  c.out.relabel(5, 3);
  for (int r : {0, 1, 4, 5}) c.out.write(r, StreamId::kStdout, "epoch 2 done\n");
  c.t += 1s;
  c.out.flush();
  EXPECT_EQ(c.cout.text(), "[0-3]<stdout>:epoch 2 done\n");
}

TEST(ConsoleFold, SomeRanksLineWaitsForTheDelayThenNamesThem) {
  Folding c(8);
  c.out.write(0, StreamId::kStdout, "loss 0.5\n");
  c.out.write(2, StreamId::kStdout, "loss 0.5\n");
  c.out.write(3, StreamId::kStdout, "loss 0.5\n");
  c.out.write(5, StreamId::kStdout, "loss 0.7\n");
  c.out.flush();
  EXPECT_EQ(c.cout.text(), "");
  c.t += 500ms;
  c.out.tick();
  EXPECT_EQ(c.cout.text(), "[0,2-3]<stdout>:loss 0.5\n[5]<stdout>:loss 0.7\n");
}

TEST(ConsoleFold, EachRanksLinesKeepTheirOrder) {
  Folding c(2);
  c.out.write(0, StreamId::kStdout, "a\n");
  c.out.write(1, StreamId::kStdout, "b\n");
  c.out.write(1, StreamId::kStdout, "a\n");  // joins rank 0's a: rank 1's b goes first
  c.out.write(0, StreamId::kStdout, "b\n");  // rank 1's b must go before the a: no join
  c.t += 1s;
  c.out.tick();
  EXPECT_EQ(c.cout.text(), "[1]<stdout>:b\n[0-1]<stdout>:a\n[0]<stdout>:b\n");
}

TEST(ConsoleFold, AlikeLinesOfOneRankAreNotMerged) {
  Folding c(2);
  c.out.write(0, StreamId::kStdout, "x\nx\n");
  c.out.write(1, StreamId::kStdout, "x\nx\n");
  c.out.flush();
  EXPECT_EQ(c.cout.text(), "[0-1]<stdout>:x\n[0-1]<stdout>:x\n");
}

TEST(ConsoleFold, StreamsAreFoldedApartAndTagStylesNameTheSet) {
  Folding c(2, TagStyle::kOpenMpi);
  c.out.write(0, StreamId::kStdout, "same\n");
  c.out.write(1, StreamId::kStderr, "same\n");
  c.out.write(1, StreamId::kStdout, "same\n");
  c.out.write(0, StreamId::kStderr, "same\n");
  c.out.flush();
  EXPECT_EQ(c.cout.text(), "[1,0-1]<stdout>:same\n");
  EXPECT_EQ(c.cerr.text(), "[1,0-1]<stderr>:same\n");
}

TEST(ConsoleFold, DiagnosticsAndTheEndPrintWhatWaits) {
  Folding c(4);
  c.out.write(1, StreamId::kStdout, "before\n");
  c.out.print_line(StreamId::kStdout, "ferryrun: rank 1 failed");
  c.out.write(2, StreamId::kStdout, "last");
  c.out.close_stream(2, StreamId::kStdout);
  c.out.flush();
  EXPECT_EQ(c.cout.text(), "[1]<stdout>:before\nferryrun: rank 1 failed\n[2]<stdout>:last\n");
}

TEST(ConsoleFold, TheWaitingBytesAreBounded) {
  OutputOptions o = Folding::options(2, TagStyle::kHorovod);
  o.fold_cap = 100;
  Console c(o);
  const std::string line(60, 'z');
  c.out.write(0, StreamId::kStdout, line + "1\n");
  c.out.write(0, StreamId::kStdout, line + "2\n");  // 124 bytes wait: the oldest goes
  c.out.flush();
  EXPECT_EQ(c.cout.text(), "[0]<stdout>:" + line + "1\n");
}

}  // namespace
}  // namespace ferry
