#include <gtest/gtest.h>

#include <vector>

#include "ferry/dynproc/spawn_placement.hpp"

namespace ferry {
namespace {

TEST(SpawnPlacement, FillsFreeSlotsInHostOrder) {
  auto p = place_spawned({1, 0, 2}, 3, false);
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(*p, (std::vector<int>{0, 2, 2}));
}

TEST(SpawnPlacement, RefusesMoreThanTheFreeSlotsWithoutOversubscribe) {
  auto p = place_spawned({1, -1, 0}, 2, false);
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("asks for 2 process(es), but the job's hosts have 1 free slot"),
            std::string::npos)
      << p.error().message;
  EXPECT_NE(p.error().message.find("--oversubscribe"), std::string::npos);
}

TEST(SpawnPlacement, OversubscribedOnesGoRoundRobinAfterTheFreeSlots) {
  auto p = place_spawned({1, 0}, 4, true);
  ASSERT_TRUE(p);
  EXPECT_EQ(*p, (std::vector<int>{0, 0, 1, 0}));
  EXPECT_FALSE(place_spawned({}, 1, true));
}

}  // namespace
}  // namespace ferry
