#include <gtest/gtest.h>

#include "ferry/binding/host_binder.hpp"

namespace ferry {
namespace {

TEST(AscendRankEnv, RankIdIsTheGlobalRankAndRankSizeTheWorld) {
  EXPECT_EQ(ascend_rank_environment(13, 16, {}),
            (std::vector<std::string>{"RANK_ID=13", "RANK_SIZE=16"}));
  EXPECT_EQ(ascend_rank_environment(0, 1, {"RANK=0"}),
            (std::vector<std::string>{"RANK_ID=0", "RANK_SIZE=1"}));
}

TEST(AscendRankEnv, UserValuesAreKept) {
  EXPECT_EQ(ascend_rank_environment(3, 8, {"RANK_SIZE=8"}), std::vector<std::string>{"RANK_ID=3"});
  EXPECT_EQ(ascend_rank_environment(3, 8, {"RANK_ID=0", "RANK_SIZE=4"}),
            std::vector<std::string>{});
  // A longer name that starts alike is not the variable.
  EXPECT_EQ(ascend_rank_environment(3, 8, {"RANK_ID_START=0"}),
            (std::vector<std::string>{"RANK_ID=3", "RANK_SIZE=8"}));
}

}  // namespace
}  // namespace ferry
