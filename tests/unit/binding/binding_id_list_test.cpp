// Linux cpulist text ("0-3,8"): what sysfs, cpuset files and users write, and the errors a
// malformed list gets.

#include <gtest/gtest.h>

#include "ferry/binding/id_list.hpp"

namespace ferry {
namespace {

std::vector<int> range(int lo, int hi) {  // [lo, hi]
  std::vector<int> v;
  for (int i = lo; i <= hi; ++i) v.push_back(i);
  return v;
}

TEST(BindingIdList, ParsesRangesAndSingles) {
  auto ids = parse_id_list(" 8,0-3,10-11\n");
  ASSERT_TRUE(ids.ok()) << ids.error().message;
  EXPECT_EQ(*ids, (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_TRUE(parse_id_list("")->empty());
  EXPECT_EQ(*parse_id_list("5"), std::vector<int>{5});
}

TEST(BindingIdList, SortsAndMergesOverlaps) {
  struct Case {
    const char* text;
    std::vector<int> ids;
  };
  for (const Case& c : std::vector<Case>{
           {"3,1,2", {1, 2, 3}},
           {"0-3,2-5", range(0, 5)},
           {"5,5,5", {5}},
           {"7-7", {7}},
           {"\t0-1\r\n", {0, 1}},
           {"   ", {}},
           {"\n", {}},
           {"00,01", {0, 1}},
       }) {
    auto ids = parse_id_list(c.text);
    ASSERT_TRUE(ids.ok()) << c.text << ": " << ids.error().message;
    EXPECT_EQ(*ids, c.ids) << c.text;
  }
}

TEST(BindingIdList, ReadsLargeSysfsLists) {
  auto ids = parse_id_list("0-11,48-59\n");
  ASSERT_TRUE(ids.ok()) << ids.error().message;
  std::vector<int> want = range(0, 11);
  for (int i : range(48, 59)) want.push_back(i);
  EXPECT_EQ(*ids, want);
  auto wide = parse_id_list("0-1048576");
  ASSERT_TRUE(wide.ok()) << wide.error().message;
  EXPECT_EQ(wide->size(), 1048577u);
  EXPECT_EQ(wide->back(), 1048576);
}

TEST(BindingIdList, RejectsMalformedText) {
  struct Case {
    const char* text;
    const char* error;
  };
  for (const Case& c : std::vector<Case>{
           {"a", "bad id list 'a'"},
           {"1,,2", "bad id list '1,,2'"},
           {",1", "bad id list ',1'"},
           {"1,", "bad id list '1,'"},
           {"0x3", "bad id list '0x3'"},
           {"1 2", "bad id list '1 2'"},
           {"1, 2", "bad id list '1, 2'"},
           {"+1", "bad id list '+1'"},
           {"1.5", "bad id list '1.5'"},
           {"99999999999", "bad id list '99999999999'"},
           {"3-1", "bad id range '3-1' in '3-1'"},
           {"-1", "bad id range '-1' in '-1'"},
           {"1-", "bad id range '1-' in '1-'"},
           {"1-2-3", "bad id range '1-2-3' in '1-2-3'"},
           {"0-3,a-b", "bad id range 'a-b' in '0-3,a-b'"},
           {" 4-x \n", "bad id range '4-x' in '4-x'"},
           {"0-1048577", "id range too large in '0-1048577'"},
       }) {
    auto ids = parse_id_list(c.text);
    ASSERT_FALSE(ids.ok()) << c.text;
    EXPECT_EQ(ids.error().message, c.error) << c.text;
  }
}

// hwloc sizes a bitmap by its largest id: a stray huge number must not allocate gigabytes.
TEST(BindingIdList, RefusesIdsNoMachineHas) {
  auto top = parse_id_list("4194303");
  ASSERT_TRUE(top.ok()) << top.error().message;
  EXPECT_EQ(*top, std::vector<int>{kMaxListedId});
  for (const char* text : {"4194304", "2147483647", "0,4194300-4194310"}) {
    auto ids = parse_id_list(text);
    ASSERT_FALSE(ids.ok()) << text;
    EXPECT_EQ(ids.error().message, "id range too large in '" + std::string(text) + "'");
  }
}

TEST(BindingIdList, FormatsCompactly) {
  EXPECT_EQ(format_id_list({8, 0, 1, 2, 3}), "0-3,8");
  EXPECT_EQ(format_id_list({0, 1}), "0-1");
  EXPECT_EQ(format_id_list({5, 5, 7}), "5,7");
  EXPECT_EQ(format_id_list({}), "");
  EXPECT_EQ(format_id_list({0}), "0");
  EXPECT_EQ(format_id_list({1, 3, 5, 6, 7, 9}), "1,3,5-7,9");
  EXPECT_EQ(format_id_list(*parse_id_list("0-11,48-59")), "0-11,48-59");
  EXPECT_EQ(format_id_list(range(0, 1023)), "0-1023");
  EXPECT_EQ(format_id_list({-1, 2, 3}), "2-3");  // not an OS index: left out
}

}  // namespace
}  // namespace ferry
