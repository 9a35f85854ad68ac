#include "ferry/output/line_assembler.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ferry {
namespace {

// Renders the handler events as console output with a "<" tag before each line, so the
// result does not depend on where chunks were split. Takes every over-cap line unless
// `refuse` is set.
struct Render {
  std::string out;
  bool refuse = false;
  int overflows = 0;
  std::size_t max_held_seen = 0;

  void lines(std::string_view held, std::string_view body) {
    EXPECT_FALSE(body.empty());
    EXPECT_EQ(body.back(), '\n');
    EXPECT_EQ(held.find('\n'), std::string_view::npos);
    bool first = true;
    std::size_t pos = 0;
    while (pos < body.size()) {
      const std::size_t nl = body.find('\n', pos);
      out += '<';
      if (first) out += held;
      first = false;
      out.append(body.substr(pos, nl + 1 - pos));
      pos = nl + 1;
    }
  }
  bool overflow(std::string_view held, std::string_view tail) {
    ++overflows;
    EXPECT_EQ(tail.find('\n'), std::string_view::npos);
    if (refuse) return false;
    out += '<';
    out += held;
    out += tail;
    return true;
  }
  void more(std::string_view bytes, bool ended) {
    EXPECT_EQ(ended, !bytes.empty() && bytes.back() == '\n');
    EXPECT_EQ(bytes.find('\n'), ended ? bytes.size() - 1 : std::string_view::npos);
    out += bytes;
  }
  void end_unterminated(std::string_view held, bool mid_line) {
    if (mid_line) {
      EXPECT_TRUE(held.empty());
      out += '\n';
    } else {
      out += '<';
      out += held;
      out += '\n';
    }
  }
};

std::string render(const std::vector<std::string_view>& chunks, std::size_t cap) {
  LineAssembler a(cap);
  Render r;
  for (auto c : chunks) a.feed(c, r);
  a.finish(r);
  return r.out;
}

using namespace std::string_literals;

const std::string kText =
    "alpha\n\nbeta gamma delta\nx\0y\na much longer line that passes small caps\nend"s;
const std::string kExpected =
    "<alpha\n<\n<beta gamma delta\n<x\0y\n<a much longer line that passes small caps\n<end\n"s;

TEST(LineAssembler, WholeTextGivesTaggedLines) {
  EXPECT_EQ(render({kText}, 1000), kExpected);
  EXPECT_EQ(render({kText}, 4), kExpected);
}

TEST(LineAssembler, EverySplitIntoTwoOrThreeChunksGivesTheSameOutput) {
  const std::string_view t = kText;
  for (std::size_t cap : {std::size_t{1000}, std::size_t{8}, std::size_t{1}}) {
    for (std::size_t i = 0; i <= t.size(); ++i) {
      ASSERT_EQ(render({t.substr(0, i), t.substr(i)}, cap), kExpected) << i << " cap " << cap;
      for (std::size_t j = i; j <= t.size(); ++j) {
        ASSERT_EQ(render({t.substr(0, i), t.substr(i, j - i), t.substr(j)}, cap), kExpected)
            << i << "," << j << " cap " << cap;
      }
    }
  }
}

TEST(LineAssembler, ByteAtATime) {
  LineAssembler a(1000);
  Render r;
  for (char c : kText) a.feed(std::string_view(&c, 1), r);
  a.finish(r);
  EXPECT_EQ(r.out, kExpected);
}

TEST(LineAssembler, HoldsPartialLineBetweenChunks) {
  LineAssembler a(100);
  Render r;
  a.feed("abc", r);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(a.held(), "abc");
  a.feed("def\nghi", r);
  EXPECT_EQ(r.out, "<abcdef\n");
  EXPECT_EQ(a.held(), "ghi");
  EXPECT_FALSE(a.mid_line());
}

TEST(LineAssembler, LongLineIsOfferedAtTheCapAndThenPassesThrough) {
  LineAssembler a(10);
  Render r;
  a.feed("0123456789", r);  // exactly the cap: still held
  EXPECT_EQ(r.overflows, 0);
  EXPECT_EQ(a.held_size(), 10u);
  a.feed("A", r);
  EXPECT_EQ(r.overflows, 1);
  EXPECT_TRUE(a.mid_line());
  EXPECT_EQ(a.held_size(), 0u);
  EXPECT_EQ(r.out, "<0123456789A");
  a.feed("BC", r);
  EXPECT_EQ(r.out, "<0123456789ABC");
  a.feed("D\nnext\n", r);
  EXPECT_FALSE(a.mid_line());
  EXPECT_EQ(r.out, "<0123456789ABCD\n<next\n");
  EXPECT_EQ(r.overflows, 1);
}

TEST(LineAssembler, HeldBytesStayBoundedForHugeLineWithoutNewline) {
  LineAssembler a(64 * 1024);
  Render r;
  const std::string chunk(4096, 'x');
  std::size_t max_held = 0;
  for (int i = 0; i < 2560; ++i) {  // 10 MiB
    a.feed(chunk, r);
    max_held = std::max(max_held, a.held_size());
  }
  EXPECT_LE(max_held, a.cap());
  EXPECT_EQ(r.overflows, 1);
  EXPECT_EQ(r.out.size(), 1 + 2560u * 4096);
  // One chunk far over the cap is offered at once, never copied into the held buffer.
  LineAssembler b(16);
  Render rb;
  b.feed(std::string(1 << 20, 'y'), rb);
  EXPECT_EQ(b.held_size(), 0u);
  EXPECT_TRUE(b.mid_line());
}

TEST(LineAssembler, RefusedLineKeepsGrowingUntilTaken) {
  LineAssembler a(4);
  Render r;
  r.refuse = true;
  a.feed("abcdef", r);
  EXPECT_EQ(r.overflows, 1);
  EXPECT_EQ(a.held(), "abcdef");
  a.feed("gh", r);
  EXPECT_EQ(r.overflows, 2);
  EXPECT_EQ(a.held(), "abcdefgh");
  EXPECT_EQ(a.take_held(), "abcdefgh");
  EXPECT_TRUE(a.mid_line());
  EXPECT_EQ(a.held_size(), 0u);
  a.feed("ij\nk", r);
  EXPECT_EQ(r.out, "ij\n");
  EXPECT_EQ(a.held(), "k");
}

TEST(LineAssembler, RefusedLineThatEndsIsAWholeLine) {
  LineAssembler a(4);
  Render r;
  r.refuse = true;
  a.feed("abcdef", r);
  a.feed("g\n", r);
  EXPECT_EQ(r.out, "<abcdefg\n");
  EXPECT_EQ(a.held_size(), 0u);
}

TEST(LineAssembler, BreakLineMakesTheContinuationANewLine) {
  LineAssembler a(4);
  Render r;
  a.feed("abcdef", r);
  ASSERT_TRUE(a.mid_line());
  a.break_line();
  r.out += '\n';  // what a handler writes when it breaks the line
  a.feed("gh\n", r);
  EXPECT_EQ(r.out, "<abcdef\n<gh\n");
}

TEST(LineAssembler, FinishReportsUnfinishedLineAndResets) {
  LineAssembler a(100);
  Render r;
  a.feed("tail", r);
  a.finish(r);
  EXPECT_EQ(r.out, "<tail\n");
  a.finish(r);  // nothing more to report
  EXPECT_EQ(r.out, "<tail\n");
  a.feed("x\n", r);
  EXPECT_EQ(r.out, "<tail\n<x\n");
}

TEST(LineAssembler, FinishMidLineReportsIt) {
  LineAssembler a(2);
  Render r;
  a.feed("abcd", r);
  a.finish(r);
  EXPECT_EQ(r.out, "<abcd\n");
  EXPECT_FALSE(a.mid_line());
}

TEST(LineAssembler, BinaryWithoutNewlines) {
  std::string bin;
  for (int i = 0; i < 300000; ++i) {
    char c = static_cast<char>((i * 131 + 7) & 0xff);
    bin += c == '\n' ? '\0' : c;
  }
  LineAssembler a(1000);
  Render r;
  for (std::size_t i = 0; i < bin.size(); i += 777) a.feed(std::string_view(bin).substr(i, 777), r);
  a.finish(r);
  EXPECT_EQ(r.out, "<" + bin + "\n");
  EXPECT_LE(a.held_size(), 1000u);
}

}  // namespace
}  // namespace ferry
