#include <gtest/gtest.h>

#include <string>

#include "ferry/common/printable.hpp"

namespace ferry {
namespace {

using namespace std::string_literals;

TEST(Printable, EscapesEveryByteOutsidePrintableAscii) {
  EXPECT_EQ(printable("node1 -np 4"), "node1 -np 4");
  EXPECT_EQ(printable("a\x01\x1b[2Jb\x7f\n"s), "a\\x01\\x1b[2Jb\\x7f\\x0a");
  EXPECT_EQ(printable("\0\xff\xc3\xa9"s), "\\x00\\xff\\xc3\\xa9");
}

TEST(Printable, CutsLongInputAndSaysHowLong) {
  const std::string name(5000, 'a');
  EXPECT_EQ(printable(name, 10), "aaaaaaaaaa... (5000 bytes)");
  EXPECT_EQ(printable(std::string(10, 'b'), 10), std::string(10, 'b'));
}

TEST(Printable, EscapingTwiceChangesNothing) {
  const std::string once = printable("x\x02y\\z"s);
  EXPECT_EQ(once, "x\\x02y\\z");
  EXPECT_EQ(printable(once), once);
}

}  // namespace
}  // namespace ferry
