// Secrets: random bytes and their hex text.

#include <gtest/gtest.h>

#include "ferry/common/random_bytes.hpp"

namespace ferry {
namespace {

TEST(RandomBytes, GivesTheCountAskedForAndDiffersBetweenCalls) {
  auto a = random_bytes(32);
  auto b = random_bytes(32);
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(32u, a->size());
  EXPECT_NE(*a, *b);  // 2^-256 to fail by chance
  auto none = random_bytes(0);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
}

TEST(HexText, TwoLowerCaseDigitsPerByte) {
  EXPECT_EQ("", hex_text(""));
  EXPECT_EQ("00ff10a7", hex_text(std::string("\x00\xff\x10\xa7", 4)));
}

}  // namespace
}  // namespace ferry
