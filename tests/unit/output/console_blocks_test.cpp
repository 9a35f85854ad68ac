// ConsoleOutput's tagged lines in blocks (format_lines_direct): many lines per write, of
// every length around the block size and the buffer, come out exactly as one at a time.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>

#include "console_test_support.hpp"

namespace ferry {
namespace {

using namespace test_support;

// What the console must print for `lines` of rank 2's stdout: each line tagged.
std::string tagged(const std::vector<std::string>& lines, const std::string& tag) {
  std::string out;
  for (const auto& l : lines) out += tag + l + "\n";
  return out;
}

TEST(ConsoleBlocks, LinesOfEveryLengthInLargeWritesMatchLineByLine) {
  std::mt19937 rng(7);
  std::vector<std::string> lines;
  std::string stream;
  for (std::size_t len : {0, 1, 2, 47, 4095, 4096, 8191, 8192, 8193, 20000, 70000, 300000}) {
    for (int k = 0; k < 3; ++k) {
      std::string l(len, static_cast<char>('a' + k));
      lines.push_back(l);
      stream += l + "\n";
    }
  }
  for (int i = 0; i < 20000; ++i) {  // short lines: many per block, blocks ending mid-line
    std::string l(rng() % 40, 'x');
    lines.push_back(l);
    stream += l + "\n";
  }
  for (std::size_t chunk :
       {std::size_t{1} << 20, std::size_t{65536}, std::size_t{9000}, std::size_t{777}}) {
    OutputOptions o = with_tag(TagStyle::kOpenMpi);
    o.line_cap = 1 << 20;  // every line whole, none taken mid-line
    Console con(o);
    for (std::size_t at = 0; at < stream.size(); at += chunk)
      con.out.write(2, StreamId::kStdout, std::string_view(stream).substr(at, chunk));
    con.out.close_stream(2, StreamId::kStdout);
    con.out.flush();
    ASSERT_EQ(con.cout.text(), tagged(lines, "[1,2]<stdout>:")) << "chunks of " << chunk;
  }
}

TEST(ConsoleBlocks, HeldStartOfALineGoesBeforeItsRest) {
  Console con(with_tag(TagStyle::kHorovod));
  con.out.write(0, StreamId::kStdout, "abc");
  std::string rest = "def\n";
  for (int i = 0; i < 5000; ++i) rest += "line" + std::to_string(i) + "\n";
  con.out.write(0, StreamId::kStdout, rest);
  con.out.flush();
  std::string want = "[0]<stdout>:abcdef\n";
  for (int i = 0; i < 5000; ++i) want += "[0]<stdout>:line" + std::to_string(i) + "\n";
  EXPECT_EQ(con.cout.text(), want);
}

// Short lines are copied in fixed 16- and 64-byte moves and prefixes in one 32-byte move,
// writing past the line into room the next one overwrites: lengths around those sizes, a
// prefix longer than 32 bytes (a timestamp), and writes that end a few bytes after a line
// start (no 16 bytes left to read) must still come out exactly.
TEST(ConsoleBlocks, ShortLinesAroundTheFixedCopySizesMatchLineByLine) {
  ::setenv("TZ", "UTC", 1);
  ::tzset();
  std::mt19937 rng(11);
  std::vector<std::string> lines;
  std::string stream;
  for (int i = 0; i < 30000; ++i) {
    std::string l(rng() % 140, static_cast<char>('a' + i % 26));
    lines.push_back(l);
    stream += l + "\n";
  }
  const struct {
    TagStyle style;
    bool stamp;
    const char* prefix;
  } cases[] = {
      {TagStyle::kMpich, false, "[3] "},
      {TagStyle::kHorovod, false, "[3]<stdout>:"},
      {TagStyle::kOpenMpi, true, "Tue Nov 14 22:13:20 2023[1,3]<stdout>:"},
  };
  for (const auto& c : cases) {
    for (std::size_t chunk : {std::size_t{1} << 20, std::size_t{4099}, std::size_t{17}}) {
      OutputOptions o = with_tag(c.style);
      o.timestamps = c.stamp;
      o.line_cap = 1 << 20;
      Console con(o);
      con.out.set_clock([] { return std::time_t{1700000000}; });
      for (std::size_t at = 0; at < stream.size(); at += chunk)
        con.out.write(3, StreamId::kStdout, std::string_view(stream).substr(at, chunk));
      con.out.close_stream(3, StreamId::kStdout);
      con.out.flush();
      ASSERT_EQ(con.cout.text(), tagged(lines, c.prefix)) << c.prefix << ", chunks of " << chunk;
    }
  }
}

}  // namespace
}  // namespace ferry
