// ConsoleOutput: ranks' bytes become whole tagged lines, per stream and fd, whatever the
// chunking (long lines: console_long_lines_test.cpp; files: console_files_test.cpp; the
// fds themselves: console_fd_test.cpp and console_write_behind_test.cpp).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "console_test_support.hpp"

namespace ferry {
namespace {

using namespace std::string_literals;
using namespace test_support;

TEST(ConsoleOutput, TagStyles) {
  const struct {
    TagStyle style;
    const char* out;
    const char* err;
  } cases[] = {
      {TagStyle::kHorovod, "[3]<stdout>:a\n[3]<stdout>:b\n", "[3]<stderr>:e\n"},
      {TagStyle::kOpenMpi, "[1,3]<stdout>:a\n[1,3]<stdout>:b\n", "[1,3]<stderr>:e\n"},
      {TagStyle::kMpich, "[3] a\n[3] b\n", "[3] e\n"},
      {TagStyle::kNone, "a\nb\n", "e\n"},
  };
  for (const auto& c : cases) {
    Console con(with_tag(c.style));
    con.out.write(3, StreamId::kStdout, "a\nb\n");
    con.out.write(3, StreamId::kStderr, "e\n");
    con.out.flush();
    EXPECT_EQ(con.cout.text(), c.out);
    EXPECT_EQ(con.cerr.text(), c.err);
  }
  EXPECT_EQ(format_tag(TagStyle::kOpenMpi, 12, StreamId::kStderr), "[1,12]<stderr>:");
}

// horovodrun's elastic mode: a worker started as 4 holds rank 2 after a reset. Lines it
// ends from then on carry 2; a line it began before and ends after, too; its host stays.
TEST(ConsoleOutput, ARelabeledRanksLinesCarryItsNewNumber) {
  Console con(with_tag(TagStyle::kHorovod));
  con.out.write(4, StreamId::kStdout, "before\nhalf");
  con.out.write(4, StreamId::kStderr, "err before\n");
  con.out.relabel(4, 2);
  con.out.write(4, StreamId::kStdout, " done\nafter\n");
  con.out.write(4, StreamId::kStderr, "err after\n");
  con.out.write(7, StreamId::kStdout, "other\n");  // a rank never relabeled keeps its number
  con.out.relabel(9, 1);                           // a rank that never wrote yet
  con.out.write(9, StreamId::kStdout, "late\n");
  con.out.flush();
  EXPECT_EQ(con.cout.text(),
            "[4]<stdout>:before\n[2]<stdout>:half done\n[2]<stdout>:after\n[7]<stdout>:other\n"
            "[1]<stdout>:late\n");
  EXPECT_EQ(con.cerr.text(), "[4]<stderr>:err before\n[2]<stderr>:err after\n");

  OutputOptions hosts = with_tag(TagStyle::kHost);
  hosts.rank_hosts = {"n0", "n0", "n1", "n1", "n2"};
  Console by_host(hosts);
  by_host.out.relabel(4, 2);
  by_host.out.write(4, StreamId::kStdout, "x\n");
  by_host.out.flush();
  EXPECT_EQ(by_host.cout.text(), "[2@n2]<stdout>:x\n");
}

TEST(ConsoleOutput, EverySplitPositionGivesIdenticalOutput) {
  const std::string text = "first\n\nbin\0\x01\xff\n  spaced line  \nlast without newline"s;
  const std::string expected =
      "[0]<stdout>:first\n[0]<stdout>:\n[0]<stdout>:bin\0\x01\xff\n"
      "[0]<stdout>:  spaced line  \n[0]<stdout>:last without newline\n"s;
  for (std::size_t cap : {std::size_t{1000}, std::size_t{5}}) {
    for (std::size_t i = 0; i <= text.size(); ++i) {
      OutputOptions o;
      o.line_cap = cap;
      Console con(o);
      con.out.write(0, StreamId::kStdout, std::string_view(text).substr(0, i));
      con.out.write(0, StreamId::kStdout, std::string_view(text).substr(i));
      con.out.close_stream(0, StreamId::kStdout);
      con.out.flush();
      ASSERT_EQ(con.cout.text(), expected) << "split at " << i << " cap " << cap;
    }
  }
}

TEST(ConsoleOutput, InterleavedRanksNeverTearALine) {
  // Four ranks, lines of varied length (some past the cap, so ranks take the fd and
  // others queue or wait), fed in random chunks in random order.
  constexpr int kRanks = 4;
  std::mt19937 rng(12345);
  std::vector<std::vector<std::string>> lines(kRanks);
  std::vector<std::string> streams(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    for (int i = 0; i < 300; ++i) {
      const std::size_t len = rng() % 5 == 0 ? 100 + rng() % 400 : rng() % 40;
      std::string line = "r" + std::to_string(r) + "l" + std::to_string(i) + ":";
      line += std::string(len, static_cast<char>('a' + r));
      lines[r].push_back(line);
      streams[r] += line + "\n";
    }
  }
  OutputOptions o;
  o.line_cap = 64;
  o.buffer_size = 1000;
  Console con(o);
  std::vector<std::size_t> pos(kRanks, 0);
  int open = kRanks;
  while (open > 0) {
    const int r = static_cast<int>(rng() % kRanks);
    if (pos[r] == streams[r].size()) continue;
    const std::size_t n = std::min<std::size_t>(1 + rng() % 200, streams[r].size() - pos[r]);
    con.out.write(r, StreamId::kStdout, std::string_view(streams[r]).substr(pos[r], n));
    pos[r] += n;
    if (pos[r] == streams[r].size()) {
      con.out.close_stream(r, StreamId::kStdout);
      --open;
    }
  }
  con.out.flush();
  std::istringstream in(con.cout.text());
  std::vector<std::size_t> next(kRanks, 0);
  std::string got;
  int count = 0;
  while (std::getline(in, got)) {
    ASSERT_GE(got.size(), 12u);
    ASSERT_EQ(got[0], '[');
    const int r = got[1] - '0';
    ASSERT_TRUE(r >= 0 && r < kRanks) << got;
    ASSERT_EQ(got.substr(0, 12), "[" + std::to_string(r) + "]<stdout>:");
    ASSERT_LT(next[r], lines[r].size());
    ASSERT_EQ(got.substr(12), lines[r][next[r]]) << "line " << count;
    ++next[r];
    ++count;
  }
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(next[r], lines[r].size());
  EXPECT_TRUE(con.warnings.empty());
}

TEST(ConsoleOutput, StderrGoesToStderrFdUnlessMerged) {
  Console sep;
  sep.out.write(1, StreamId::kStdout, "o1\n");
  sep.out.write(1, StreamId::kStderr, "e1\n");
  sep.out.write(1, StreamId::kStdout, "o2\n");
  sep.out.flush();
  EXPECT_EQ(sep.cout.text(), "[1]<stdout>:o1\n[1]<stdout>:o2\n");
  EXPECT_EQ(sep.cerr.text(), "[1]<stderr>:e1\n");

  OutputOptions o;
  o.merge_stderr = true;
  Console merged(o);
  merged.out.write(1, StreamId::kStdout, "o1\n");
  merged.out.write(1, StreamId::kStderr, "e1\n");
  merged.out.write(1, StreamId::kStdout, "o2\n");
  merged.out.flush();
  EXPECT_EQ(merged.cout.text(), "[1]<stdout>:o1\n[1]<stderr>:e1\n[1]<stdout>:o2\n");
  EXPECT_EQ(merged.cerr.text(), "");
}

TEST(ConsoleOutput, SameFileForBothFdsIsOneDestination) {
  Capture cap;
  const int dup_fd = ::dup(cap.fd());
  {
    ConsoleOutput out(OutputOptions{}, cap.fd(), dup_fd);
    out.write(0, StreamId::kStdout, std::string(100000, 'x'));  // holds the fd
    out.write(0, StreamId::kStderr, "err\n");                   // must not land mid-line
    out.flush();
    out.write(0, StreamId::kStdout, "\n");
    out.flush();
  }
  ::close(dup_fd);
  EXPECT_EQ(cap.text(), "[0]<stdout>:" + std::string(100000, 'x') + "\n[0]<stderr>:err\n");
}

TEST(ConsoleOutput, LastLineWithoutNewline) {
  TempDir dir;
  OutputOptions o;
  o.output_dir = dir.path.string();
  Console con(o);
  con.out.write(0, StreamId::kStdout, "one\ntail");
  con.out.flush();
  EXPECT_EQ(con.cout.text(), "[0]<stdout>:one\n");
  con.out.close_stream(0, StreamId::kStdout);
  con.out.flush();
  EXPECT_EQ(con.cout.text(), "[0]<stdout>:one\n[0]<stdout>:tail\n");
  EXPECT_EQ(read_file(dir.path / "rank.0" / "stdout"), "one\ntail");
}

TEST(ConsoleOutput, BinaryWithNulsAndNoNewlines) {
  std::string bin(3 << 20, '\0');
  std::mt19937 rng(7);
  for (char& c : bin) {
    c = static_cast<char>(rng() & 0xff);
    if (c == '\n') c = '\0';
  }
  TempDir dir;
  OutputOptions o;
  o.tag = TagStyle::kNone;
  o.output_dir = dir.path.string();
  Console con(o);
  for (std::size_t i = 0; i < bin.size(); i += 10007) {
    con.out.write(0, StreamId::kStdout, std::string_view(bin).substr(i, 10007));
    ASSERT_LE(con.out.buffered_bytes(), o.line_cap + o.buffer_size + 16 * 1024);
  }
  con.out.close_stream(0, StreamId::kStdout);
  con.out.flush();
  // Untagged, the console gets the bytes exactly, as the file does: no newline made up.
  EXPECT_EQ(con.cout.text(), bin);
  EXPECT_EQ(read_file(dir.path / "rank.0" / "stdout"), bin);
}

TEST(ConsoleOutput, UntaggedLastLineKeepsItsBytesTaggedOnesEndTheLine) {
  for (const bool stamped : {false, true}) {
    OutputOptions o = with_tag(TagStyle::kNone);
    o.timestamps = stamped;
    Console con(o);
    con.out.write(0, StreamId::kStdout, "one\ntail");
    con.out.close_stream(0, StreamId::kStdout);
    con.out.flush();
    if (stamped)  // a stamp and tag start the line: it is ended, or the next is glued on
      EXPECT_EQ(con.cout.text().substr(con.cout.text().size() - 14), "<stdout>:tail\n");
    else
      EXPECT_EQ(con.cout.text(), "one\ntail");
  }
  Console tagged(with_tag(TagStyle::kMpich));
  tagged.out.write(2, StreamId::kStdout, "tail");
  tagged.out.close_stream(2, StreamId::kStdout);
  tagged.out.flush();
  EXPECT_EQ(tagged.cout.text(), "[2] tail\n");
}

TEST(ConsoleOutput, TimestampPrefix) {
  ::setenv("TZ", "UTC", 1);
  ::tzset();
  EXPECT_EQ(format_timestamp(1700000000), "Tue Nov 14 22:13:20 2023");
  EXPECT_EQ(format_timestamp(1699000000), "Fri Nov  3 08:26:40 2023");  // day padded
  const struct {
    TagStyle style;
    const char* line;
  } cases[] = {
      {TagStyle::kHorovod, "Tue Nov 14 22:13:20 2023[5]<stdout>:hi\n"},
      {TagStyle::kOpenMpi, "Tue Nov 14 22:13:20 2023[1,5]<stdout>:hi\n"},
      {TagStyle::kMpich, "Tue Nov 14 22:13:20 2023[5] hi\n"},
      {TagStyle::kNone, "Tue Nov 14 22:13:20 2023<stdout>:hi\n"},
  };
  for (const auto& c : cases) {
    OutputOptions o = with_tag(c.style);
    o.timestamps = true;
    Console con(o);
    con.out.set_clock([] { return std::time_t{1700000000}; });
    con.out.write(5, StreamId::kStdout, "hi\nhi\n");
    con.out.flush();
    EXPECT_EQ(con.cout.text(), std::string(c.line) + c.line);
  }
  OutputOptions o;
  o.timestamps = true;
  Console real(o);  // the real clock: check the shape only
  real.out.write(0, StreamId::kStdout, "x\n");
  real.out.flush();
  const std::string line = real.cout.text();
  ASSERT_EQ(line.size(), 24u + 14u) << line;
  EXPECT_EQ(line.substr(24), "[0]<stdout>:x\n");
  EXPECT_EQ(line[3], ' ');
  EXPECT_EQ(line[13], ':');
  EXPECT_EQ(line[16], ':');
}

}  // namespace
}  // namespace ferry
