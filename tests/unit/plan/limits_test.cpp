// How large a job may be, and the exports ferry overrides.
#include "ferry/plan/limits.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "ferry/plan/environment.hpp"

namespace ferry {
namespace {

Placement placed(std::vector<std::pair<const char*, int>> hosts) {
  HostList list;
  for (auto& [name, slots] : hosts) {
    HostEntry h;
    h.name = name;
    h.slots = slots;
    list.push_back(h);
  }
  auto p = place_ranks(list, 0, false, PlacementPolicy{});
  EXPECT_TRUE(p);
  return p ? *p : Placement{};
}

TEST(JobSize, WithinTheLimitsIsFine) {
  EXPECT_TRUE(check_job_size(placed({{"a", kMaxRanksPerHost}, {"b", 1}})));
}

TEST(JobSize, TooManyRanksOnAHostNamesTheHostAndTheLimit) {
  Status st = check_job_size(placed({{"a", 2}, {"big", kMaxRanksPerHost + 1}}));
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message, std::to_string(kMaxRanksPerHost + 1) +
                                    " ranks on host big: a host has at most " +
                                    std::to_string(kMaxRanksPerHost));
}

TEST(JobSize, TooManyRanksInAllNamesTheLimit) {
  std::vector<std::pair<const char*, int>> hosts(9, {"h", kMaxRanks / 8});
  Status st = check_job_size(placed(hosts));
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message, std::to_string(kMaxRanks / 8 * 9) + " ranks: a job has at most " +
                                    std::to_string(kMaxRanks));
}

TEST(OverriddenExports, EveryVariableFerrySetsAfterTheExportsIsNamed) {
  // Whatever job_environment puts after the exported block, and every rank variable,
  // overrides an export of the same name: each must be reported.
  Placement p = placed({{"a", 2}});
  JobEnvironment je;
  je.exported = {"ZZ_MARK=1"};
  auto job = job_environment(p, je);
  auto mark = std::find(job.begin(), job.end(), "ZZ_MARK=1");
  ASSERT_NE(mark, job.end());
  std::vector<std::string> set_after(mark + 1, job.end());
  auto rank = rank_environment(p, p.hosts[0], p.hosts[0].ranks[0]);
  set_after.insert(set_after.end(), rank.begin(), rank.end());
  for (const auto& kv : set_after) {
    const std::string name = kv.substr(0, kv.find('='));
    EXPECT_EQ(overridden_exports({name + "=x"}), std::vector<std::string>{name});
  }
  EXPECT_TRUE(
      overridden_exports({"MASTER_PORT=1", "MASTER_ADDR=x", "PYTHONUNBUFFERED=0", "MINE"}).empty());
  EXPECT_EQ(overridden_exports({"RANK=1", "X=2", "WORLD_SIZE", "RANK=3"}),
            (std::vector<std::string>{"RANK", "WORLD_SIZE"}));
}

}  // namespace
}  // namespace ferry
