// The shared text helpers: what every parser relies on for blanks, case and separators.

#include <gtest/gtest.h>

#include "ferry/common/text.hpp"

namespace ferry {
namespace {

TEST(CommonText, TrimDropsAsciiWhitespaceAtBothEnds) {
  EXPECT_EQ(trim(" \t a b \r\n"), "a b");
  EXPECT_EQ(trim("\v\fx\f\v"), "x");
  EXPECT_EQ(trim("   "), "");
  EXPECT_EQ(trim(""), "");
  EXPECT_EQ(trim("x"), "x");
  // Not whitespace in any locale ferry cares about: a UTF-8 no-break space stays.
  EXPECT_EQ(trim("\xc2\xa0x"), "\xc2\xa0x");
}

TEST(CommonText, TrimViewsItsArgument) {
  const std::string text = "  abc  ";
  std::string_view t = trim(text);
  EXPECT_EQ(t.data(), text.data() + 2);
  EXPECT_EQ(t.size(), 3u);
}

TEST(CommonText, IsSpaceIsTheCLocaleSet) {
  for (char c : std::string(" \t\n\v\f\r")) EXPECT_TRUE(is_space(c)) << int(c);
  for (char c : std::string("a0_-\x01\x7f")) EXPECT_FALSE(is_space(c)) << int(c);
  EXPECT_FALSE(is_space('\0'));
}

TEST(CommonText, LowerOnlyTouchesAsciiLetters) {
  EXPECT_EQ(lower("StrictHostKeyChecking"), "stricthostkeychecking");
  EXPECT_EQ(lower("PE=2,SPAN"), "pe=2,span");
  EXPECT_EQ(lower(".YAML"), ".yaml");
  EXPECT_EQ(lower("\xc3\x89t\xc3\xa9"), "\xc3\x89t\xc3\xa9");  // "Été": UTF-8 bytes unchanged
  EXPECT_EQ(lower(""), "");
}

TEST(CommonText, SplitKeepsEmptyPieces) {
  EXPECT_EQ(split("a,,b", ','), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(split("a:b", ':'), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(split("", ','), (std::vector<std::string>{""}));
  EXPECT_EQ(split(",", ','), (std::vector<std::string>{"", ""}));
  EXPECT_EQ(split("abc", ','), (std::vector<std::string>{"abc"}));
}

TEST(NumberRanges, SortedRunsJoinedByCommas) {
  EXPECT_EQ(number_ranges({8, 0, 1, 2, 3, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(number_ranges({5}), "5");
  EXPECT_EQ(number_ranges({}), "");
  EXPECT_EQ(number_ranges({2, 2, 3}), "2-3");
  EXPECT_EQ(number_ranges({0, 2, 4}), "0,2,4");
}

}  // namespace
}  // namespace ferry
