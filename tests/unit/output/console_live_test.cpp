// ConsoleOutput's progress bars and prompts: carriage-return updates keep only their last
// state, are drawn in place on a terminal at a bounded rate without tearing other lines,
// and a prompt (an unfinished line that sits) is shown; --console-ranks and the host tag.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "console_test_support.hpp"

namespace ferry {
namespace {

using namespace std::chrono_literals;
using namespace test_support;
using Clock = std::chrono::steady_clock;

OutputOptions live(LiveBars bars) {
  OutputOptions o;
  o.live_bars = bars;
  o.world_size = 4;
  o.merge_stderr = true;
  return o;
}

// A console with a clock the test moves.
struct Timed : Console {
  explicit Timed(OutputOptions o) : Console(std::move(o)) {
    out.set_steady_clock([this] { return t; });
  }
  Clock::time_point t = Clock::time_point() + 1h;
};

TEST(ConsoleLive, IntoAPipeOnlyTheBarsFinalStateArrives) {
  Timed c(live(LiveBars::kOff));
  for (int i = 0; i <= 100; i += 10) {
    c.out.write(0, StreamId::kStderr, "\r" + std::to_string(i) + "%|###|");
    c.t += 50ms;
    c.out.tick();
  }
  EXPECT_EQ(c.cout.text(), "");  // nothing in between
  c.out.write(0, StreamId::kStderr, "\n");
  c.out.write(1, StreamId::kStdout, "epoch 1\n");
  c.out.flush();
  EXPECT_EQ(c.cout.text(), "[0]<stderr>:100%|###|\n[1]<stdout>:epoch 1\n");
  // Memory stays bounded: superseded states are dropped as they come.
  EXPECT_EQ(c.out.buffered_bytes(), 0u);
}

TEST(ConsoleLive, StatesThatComeWithTheNewlineAreDroppedToo) {
  Timed c(live(LiveBars::kOff));
  c.out.write(2, StreamId::kStdout, "\r1%");
  c.out.write(2, StreamId::kStdout, "\r2%\r3%\r100%\n");
  c.out.flush();
  EXPECT_EQ(c.cout.text(), "[2]<stdout>:100%\n");
}

TEST(ConsoleLive, AReturnAfterEachStateMakesABarToo) {
  Timed c(live(LiveBars::kOff));
  c.out.write(1, StreamId::kStdout, "10%\r");
  c.out.write(1, StreamId::kStdout, "20%\r");
  c.t += 1s;
  c.out.tick();  // a bar, not a prompt: nothing is shown into a file
  EXPECT_EQ(c.cout.text(), "");
  c.out.write(1, StreamId::kStdout, "100%\n");
  c.out.flush();
  EXPECT_EQ(c.cout.text(), "[1]<stdout>:100%\n");
}

TEST(ConsoleLive, UntaggedBarsPassAsTheyComeByteForByte) {
  Console c(with_tag(TagStyle::kNone));
  c.out.write(0, StreamId::kStdout, "\r10%");
  c.out.flush();
  EXPECT_EQ(c.cout.text(), "\r10%");             // at once, as written
  c.out.write(1, StreamId::kStdout, "other\n");  // waits for the bar's line
  c.out.write(0, StreamId::kStdout, "\r100%\n");
  c.out.flush();
  EXPECT_EQ(c.cout.text(), "\r10%\r100%\nother\n");
}

TEST(ConsoleLive, CarriageReturnLineEndsAreKept) {
  Timed c(live(LiveBars::kOff));
  c.out.write(0, StreamId::kStdout, "dos line\r");
  c.out.write(0, StreamId::kStdout, "\nnext\r\n");
  c.out.flush();
  EXPECT_EQ(c.cout.text(), "[0]<stdout>:dos line\r\n[0]<stdout>:next\r\n");
}

TEST(ConsoleLive, OnATerminalTheBarIsRedrawnInPlaceAtABoundedRate) {
  Timed c(live(LiveBars::kOn));
  c.out.write(0, StreamId::kStderr, "\r10%");
  c.out.flush();
  EXPECT_EQ(c.cout.text(), "\r[0]<stderr>:10%");
  c.out.write(0, StreamId::kStderr, "\r20%");
  c.out.flush();  // too soon: not drawn yet
  EXPECT_EQ(c.cout.text(), "\r[0]<stderr>:10%");
  c.t += 100ms;
  c.out.tick();
  EXPECT_EQ(c.cout.text(), "\r[0]<stderr>:10%\r\x1b[K[0]<stderr>:20%");
}

TEST(ConsoleLive, AnotherRanksLineErasesTheBarAndTheBarComesBackBelowIt) {
  Timed c(live(LiveBars::kOn));
  c.out.write(0, StreamId::kStderr, "\r10%");
  c.out.flush();
  c.out.write(1, StreamId::kStdout, "hello\n");
  c.out.flush();
  const std::string before = "\r[0]<stderr>:10%\r\x1b[K[1]<stdout>:hello\n";
  EXPECT_EQ(c.cout.text(), before);  // never torn: the bar is gone before the line
  c.t += 100ms;
  c.out.tick();
  EXPECT_EQ(c.cout.text(), before + "\r[0]<stderr>:10%");
  c.out.write(0, StreamId::kStderr, "\r100%\n");
  c.out.flush();
  EXPECT_EQ(c.cout.text(), before + "\r[0]<stderr>:10%\r\x1b[K[0]<stderr>:100%\n");
}

TEST(ConsoleLive, TheLowestRanksBarIsTheOneDrawn) {
  Timed c(live(LiveBars::kOn));
  c.out.write(2, StreamId::kStderr, "\rtwo");
  c.out.write(1, StreamId::kStderr, "\rone");
  c.out.flush();
  EXPECT_EQ(c.cout.text(), "\r[1]<stderr>:one");
  c.out.write(1, StreamId::kStderr, "\n");  // rank 1's bar ends: rank 2's is drawn next
  c.t += 100ms;
  c.out.tick();
  EXPECT_EQ(c.cout.text(), "\r[1]<stderr>:one\r\x1b[K[1]<stderr>:one\n\r[2]<stderr>:two");
}

TEST(ConsoleLive, APromptThatSitsIsShown) {
  Timed c(live(LiveBars::kOff));
  c.out.write(0, StreamId::kStdout, "Password: ");
  c.out.flush();
  EXPECT_EQ(c.cout.text(), "");
  c.t += 200ms;
  c.out.tick();
  EXPECT_EQ(c.cout.text(), "");
  c.t += 200ms;
  c.out.tick();
  EXPECT_EQ(c.cout.text(), "[0]<stdout>:Password: ");
  // It holds the fd: another rank's line waits for its end, and the line stays whole.
  c.out.write(1, StreamId::kStdout, "other\n");
  c.out.flush();
  EXPECT_EQ(c.cout.text(), "[0]<stdout>:Password: ");
  c.out.write(0, StreamId::kStdout, "ok\n");
  c.out.flush();
  EXPECT_EQ(c.cout.text(), "[0]<stdout>:Password: ok\n[1]<stdout>:other\n");
}

// Amid heavy output (256 KiB or more in the second of the line's last bytes or the one
// before), an unfinished line waits 2 s before it counts as a prompt: its rest is more
// likely still on its way. After a quiet spell the usual 300 ms again.
TEST(ConsoleLive, APromptAmidHeavyOutputWaitsLonger) {
  Timed c(live(LiveBars::kOff));
  const std::string line(999, 'x');
  for (int i = 0; i < 300; ++i) c.out.write(0, StreamId::kStdout, line + "\n");
  c.out.write(0, StreamId::kStdout, "r0 12");  // the line's rest not here yet
  c.out.flush();
  const std::size_t lines = c.cout.text().size();
  c.t += 400ms;
  c.out.tick();
  EXPECT_EQ(c.cout.text().size(), lines) << "taken as a prompt amid heavy output";
  c.t += 1700ms;
  c.out.tick();
  EXPECT_EQ(c.cout.text().substr(lines), "[0]<stdout>:r0 12");
  c.out.write(0, StreamId::kStdout, "34\n");
  c.out.flush();
  EXPECT_EQ(c.cout.text().substr(lines), "[0]<stdout>:r0 1234\n");

  c.t += 3s;  // quiet
  c.out.write(0, StreamId::kStdout, "Password: ");
  c.out.flush();
  c.t += 400ms;
  c.out.tick();
  EXPECT_EQ(c.cout.text().substr(lines), "[0]<stdout>:r0 1234\n[0]<stdout>:Password: ");
}

TEST(ConsoleLive, ConsoleRanksShowsOnlyThoseRanksFilesGetEveryRank) {
  TempDir dir;
  OutputOptions o;
  o.world_size = 4;
  o.console_ranks = {0, 3};
  o.output_dir = dir.path.string();
  Console c(o);
  for (int r = 0; r < 4; ++r) c.out.write(r, StreamId::kStdout, "line " + std::to_string(r) + "\n");
  for (int r = 0; r < 4; ++r) c.out.close_stream(r, StreamId::kStdout);
  c.out.flush();
  EXPECT_EQ(c.cout.text(), "[0]<stdout>:line 0\n[3]<stdout>:line 3\n");
  EXPECT_EQ(read_file(rank_file_path(o, 1, StreamId::kStdout)), "line 1\n");
}

TEST(ConsoleLive, HostTagNamesTheRanksHost) {
  OutputOptions o = with_tag(TagStyle::kHost);
  o.rank_hosts = {"node1", "node2"};
  Console c(o);
  c.out.write(1, StreamId::kStdout, "x\n");
  c.out.write(2, StreamId::kStdout, "y\n");  // no host known: the plain tag
  c.out.flush();
  EXPECT_EQ(c.cout.text(), "[1@node2]<stdout>:x\n[2]<stdout>:y\n");
}

}  // namespace
}  // namespace ferry
