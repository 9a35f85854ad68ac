// ferryd's HostBinder on this machine's topology with fake device trees: the Ascend rank
// variables that need the job's global ranks.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "ferry/daemon/host_binder.hpp"

namespace ferry {
namespace {

namespace fs = std::filesystem;

// A temporary "/" holding only `files` (empty).
class TempRoot {
 public:
  explicit TempRoot(const std::vector<std::string>& files) {
    std::string tmpl = (fs::temp_directory_path() / "ferry-binder-XXXXXX").string();
    dir_ = ::mkdtemp(tmpl.data()) ? tmpl : "";
    EXPECT_FALSE(dir_.empty());
    for (const auto& f : files) {
      fs::create_directories((fs::path(dir_) / f).parent_path());
      std::ofstream(fs::path(dir_) / f) << "";
    }
  }
  ~TempRoot() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  const std::string& path() const { return dir_; }

 private:
  std::string dir_;
};

bool has_env(const RankBinding& r, const std::string& kv) {
  return std::find(r.env.begin(), r.env.end(), kv) != r.env.end();
}

bool has_var(const RankBinding& r, const std::string& name) {
  return std::any_of(r.env.begin(), r.env.end(),
                     [&](const std::string& kv) { return kv.rfind(name + "=", 0) == 0; });
}

bool mentions(const std::vector<std::string>& lines, const std::string& text) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& l) { return l.find(text) != std::string::npos; });
}

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
  if (b.summary().rfind("no CPU topology", 0) != 0) {  // devices are assigned with a topology
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

}  // namespace
}  // namespace ferry
