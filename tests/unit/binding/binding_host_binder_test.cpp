// ferryd's HostBinder on this machine's topology with fake device trees: the Ascend rank
// variables that need the job's global ranks.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string_view>

#include "binding_fake_root.hpp"
#include "ferry/binding/host_binder.hpp"
#include "ferry/common/settings.hpp"

namespace ferry {
namespace {

using test_support::has_env;
using test_support::has_var;
using test_support::mentions;

// A fake "/" holding only `files` (empty).
struct TempRoot : test_support::FakeRoot {
  explicit TempRoot(const std::vector<std::string>& files) {
    for (const auto& f : files) file(f, "");
  }
};

BindingOptions unbound() {
  BindingOptions o;
  o.bind_to = BindTo::kNone;  // whatever this machine's cores, the plan succeeds
  return o;
}

TEST(HostBinderAscend, RanksGetTheirGlobalRankAsRankId) {
  TempRoot root({"dev/davinci0", "dev/davinci1", "dev/davinci2", "dev/davinci3"});
  HostBinder b;
  b.load(root.path());
  std::vector<std::string> lines;
  auto p = b.plan(unbound(), std::vector<int>{4, 5}, 8, {}, "npu2", false, lines);
  ASSERT_TRUE(p.ok()) << p.error().message;
  ASSERT_EQ(p->ranks.size(), 2u);
  EXPECT_TRUE(has_env(p->ranks[0], "RANK_ID=4"));
  EXPECT_TRUE(has_env(p->ranks[1], "RANK_ID=5"));
  EXPECT_TRUE(has_env(p->ranks[1], "RANK_SIZE=8"));
  if (!b.summary().starts_with("no CPU topology")) {  // devices are assigned with a topology
    EXPECT_TRUE(has_env(p->ranks[1], "DEVICE_ID=1"));
    EXPECT_TRUE(has_env(p->ranks[1], "ASCEND_RT_VISIBLE_DEVICES=0,1,2,3"));
  }
  // The overload without global ranks cannot name them.
  auto local_only = b.plan(unbound(), 2, {}, "npu2", false, lines);
  ASSERT_TRUE(local_only.ok());
  EXPECT_FALSE(has_var(local_only->ranks[0], "RANK_ID"));
}

TEST(HostBinderAscend, UserValuesKeptWithAWarningWhenTheyCannotFit) {
  TempRoot root({"dev/davinci0", "dev/davinci1"});
  HostBinder b;
  b.load(root.path());
  std::vector<std::string> lines;
  auto p = b.plan(unbound(), std::vector<int>{0, 1}, 2, {"RANK_ID=0", "RANK_SIZE=4"}, "npu1", false,
                  lines);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(has_var(p->ranks[1], "RANK_ID"));
  EXPECT_FALSE(has_var(p->ranks[1], "RANK_SIZE"));
  EXPECT_TRUE(mentions(lines, "npu1: warning: RANK_ID=0 set by the user"));
  EXPECT_TRUE(mentions(lines, "npu1: warning: RANK_SIZE=4 set by the user, but the job has 2"));
  lines.clear();
  auto fitting = b.plan(unbound(), std::vector<int>{0}, 1, {"RANK_SIZE=1"}, "npu1", false, lines);
  ASSERT_TRUE(fitting.ok());
  EXPECT_TRUE(has_env(fitting->ranks[0], "RANK_ID=0"));
  EXPECT_FALSE(mentions(lines, "warning"));
}

TEST(HostBinderAscend, OnlyOnAscendHostsOrWhenTheUserChoseAscend) {
  TempRoot nvidia({"proc/driver/nvidia/gpus/0000:18:00.0/information"});
  HostBinder b;
  b.load(nvidia.path());
  std::vector<std::string> lines;
  auto p = b.plan(unbound(), std::vector<int>{3}, 4, {}, "gpu1", false, lines);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(has_var(p->ranks[0], "RANK_ID"));
  EXPECT_FALSE(has_var(p->ranks[0], "RANK_SIZE"));

  TempRoot empty({});
  HostBinder none;
  none.load(empty.path());
  auto cpu = none.plan(unbound(), std::vector<int>{3}, 4, {}, "cpu1", false, lines);
  ASSERT_TRUE(cpu.ok());
  EXPECT_FALSE(has_var(cpu->ranks[0], "RANK_ID"));
  auto chosen = none.plan(unbound(), std::vector<int>{3}, 4, {"ASCEND_RT_VISIBLE_DEVICES=0"},
                          "cpu1", false, lines);
  ASSERT_TRUE(chosen.ok());
  EXPECT_TRUE(has_env(chosen->ranks[0], "RANK_ID=3"));
  EXPECT_TRUE(has_env(chosen->ranks[0], "RANK_SIZE=4"));
}

// ferryd loads from the device root of its settings (FERRY_TEST_DEVICE_ROOT: the e2e tests'
// fake device trees).
TEST(HostBinderLoad, FromTheDeviceRootOfTheSettings) {
  test_support::FakeRoot root;
  root.proc_self_cgroup("0::/\n");
  root.cpu_max("", "200000 100000\n");
  std::vector<std::string> warnings;
  const std::string path = root.path();
  const Settings s = read_settings(
      [&](const char* name) {
        return std::string_view(name) == "FERRY_TEST_DEVICE_ROOT" ? path.c_str() : nullptr;
      },
      SettingsOf::kFerryd, warnings);
  HostBinder fake;
  fake.load(s.device_root);
  EXPECT_NE(fake.summary().find("; CPU quota 2 CPUs"), std::string::npos) << fake.summary();
  EXPECT_EQ(
      read_settings([](const char*) { return nullptr; }, SettingsOf::kFerryd, warnings).device_root,
      "/");
  EXPECT_TRUE(warnings.empty());
}

}  // namespace
}  // namespace ferry
