// ConsoleOutput's long lines: a line past the cap holds its fd while others' lines wait,
// and the held-back output stays bounded.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "console_test_support.hpp"

namespace ferry {
namespace {

using namespace std::string_literals;
using namespace test_support;

TEST(ConsoleOutput, TenMegabyteLineWithoutNewlinePassesThroughBounded) {
  OutputOptions o;
  Console con(o);
  std::string big(10 << 20, 'z');
  for (std::size_t i = 0; i < big.size(); i += 7919) big[i] = static_cast<char>('A' + i % 26);
  std::size_t max_buffered = 0;
  for (std::size_t i = 0; i < big.size(); i += 65536) {
    con.out.write(0, StreamId::kStdout, std::string_view(big).substr(i, 65536));
    max_buffered = std::max(max_buffered, con.out.buffered_bytes());
    if (i == (5 << 20)) con.out.write(1, StreamId::kStdout, "other rank\n");  // queued
  }
  EXPECT_LE(max_buffered, o.line_cap + o.buffer_size + 100);
  con.out.close_stream(0, StreamId::kStdout);
  con.out.flush();
  EXPECT_EQ(con.out.buffered_bytes(), 0u);
  EXPECT_EQ(con.cout.text(), "[0]<stdout>:" + big + "\n[1]<stdout>:other rank\n");

  Console once;  // one write call of the whole line
  once.out.write(2, StreamId::kStdout, big);
  EXPECT_LE(once.out.buffered_bytes(), o.buffer_size);
  once.out.write(2, StreamId::kStdout, "\n");
  once.out.flush();
  EXPECT_EQ(once.cout.text(), "[2]<stdout>:" + big + "\n");
}

TEST(ConsoleOutput, LinesOfOthersWaitBehindALongLine) {
  OutputOptions o;
  o.line_cap = 8;
  Console con(o);
  con.out.write(0, StreamId::kStdout, "0123456789");  // past the cap: holds stdout
  con.out.write(1, StreamId::kStdout, "one\ntwo\n");
  con.out.print_line(StreamId::kStdout, "diagnostic");
  con.out.write(2, StreamId::kStderr, "err\n");  // other fd: not held
  con.out.flush();
  EXPECT_EQ(con.cout.text(), "[0]<stdout>:0123456789");
  EXPECT_EQ(con.cerr.text(), "[2]<stderr>:err\n");
  con.out.write(0, StreamId::kStdout, "AB\nnext\n");
  con.out.flush();
  EXPECT_EQ(con.cout.text(),
            "[0]<stdout>:0123456789AB\n[1]<stdout>:one\n[1]<stdout>:two\ndiagnostic\n"
            "[0]<stdout>:next\n");
}

TEST(ConsoleOutput, SecondLongLineWaitsAndTakesTheFdNext) {
  OutputOptions o;
  o.line_cap = 4;
  Console con(o);
  con.out.write(0, StreamId::kStdout, "AAAAAA");
  con.out.write(1, StreamId::kStdout, "BBBBBBBB");  // waits, held past the cap
  con.out.write(2, StreamId::kStdout, "c\n");
  con.out.write(1, StreamId::kStdout, "BB");
  con.out.write(0, StreamId::kStdout, "A\n");  // 0 releases; 2's line, then 1 takes
  con.out.write(1, StreamId::kStdout, "B");
  con.out.write(2, StreamId::kStdout, "d\n");  // queued behind 1 now
  con.out.close_stream(1, StreamId::kStdout);  // 1 ends without newline
  con.out.flush();
  EXPECT_EQ(con.cout.text(),
            "[0]<stdout>:AAAAAAA\n[2]<stdout>:c\n[1]<stdout>:BBBBBBBBBBB\n[2]<stdout>:d\n");
}

TEST(ConsoleOutput, QueueOverflowBreaksTheHolderLineWithoutLosingBytes) {
  OutputOptions o;
  o.line_cap = 16;
  o.queue_cap = 1000;
  Console con(o);
  const std::string first(100, 'h');
  con.out.write(0, StreamId::kStdout, first);  // holds the fd
  std::string expected_others;
  int n = 0;
  // Each queued line is 12 + 28 bytes: the 26th passes 1000 bytes.
  for (; n < 25; ++n) {
    const std::string line = "line " + std::to_string(100 + n) + std::string(19, '.') + "\n";
    con.out.write(1, StreamId::kStdout, line);
    expected_others += "[1]<stdout>:" + line;
  }
  con.out.flush();
  EXPECT_EQ(con.cout.text(), "[0]<stdout>:" + first);  // still held, 1000 bytes queued
  EXPECT_TRUE(con.warnings.empty());
  const std::string last = "line 125" + std::string(19, '.') + "\n";
  con.out.write(1, StreamId::kStdout, last);
  expected_others += "[1]<stdout>:" + last;
  ASSERT_EQ(con.warnings.size(), 1u);
  EXPECT_NE(con.warnings[0].find("no bytes were lost"), std::string::npos);
  EXPECT_NE(con.warnings[0].find("rank 0"), std::string::npos);
  con.out.write(0, StreamId::kStdout, "tail\n");  // continuation: a new tagged line
  con.out.flush();
  EXPECT_EQ(con.cout.text(),
            "[0]<stdout>:" + first + "\n" + expected_others + "[0]<stdout>:tail\n");
  EXPECT_EQ(con.out.buffered_bytes(), 0u);
}

TEST(ConsoleOutput, QueueOverflowCountsWaitingLongLines) {
  OutputOptions o;
  o.line_cap = 4;
  o.queue_cap = 100;
  Console con(o);
  con.out.write(0, StreamId::kStdout, "aaaaaa");
  con.out.write(1, StreamId::kStdout, std::string(150, 'b'));  // waits; over the queue cap
  con.out.write(0, StreamId::kStdout, "aa\n");
  con.out.write(1, StreamId::kStdout, "b\n");
  con.out.flush();
  // 0 is broken, 1 takes the fd at once; 0's continuation waits behind 1's line.
  EXPECT_EQ(con.cout.text(),
            "[0]<stdout>:aaaaaa\n[1]<stdout>:" + std::string(151, 'b') + "\n[0]<stdout>:aa\n");
  EXPECT_EQ(con.warnings.size(), 1u);
}

}  // namespace
}  // namespace ferry
