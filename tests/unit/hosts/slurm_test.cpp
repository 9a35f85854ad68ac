// Slurm host lists, task counts, and the HostList of an allocation.

#include "ferry/hosts/slurm.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace ferry {
namespace {

using Names = std::vector<std::string>;
using Env = std::map<std::string, std::string>;

Names expand_ok(const std::string& expr) {
  auto names = expand_hostlist(expr);
  EXPECT_TRUE(names.ok()) << expr << ": " << (names.ok() ? "" : names.error().message);
  return names.ok() ? *names : Names{};
}

std::string expand_error(const std::string& expr) {
  auto names = expand_hostlist(expr);
  EXPECT_FALSE(names.ok()) << expr << " expanded";
  return names.ok() ? "" : names.error().message;
}

TEST(SlurmHostlist, RangesKeepZeroPadding) {
  EXPECT_EQ(expand_ok("node[01-04,07]"), (Names{"node01", "node02", "node03", "node04", "node07"}));
  EXPECT_EQ(expand_ok("n[08-10]"), (Names{"n08", "n09", "n10"}));
  EXPECT_EQ(expand_ok("n[8-10]"), (Names{"n8", "n9", "n10"}));
  EXPECT_EQ(expand_ok("n[007]"), (Names{"n007"}));
}

TEST(SlurmHostlist, SuffixAfterBracketsAndPlainItems) {
  EXPECT_EQ(expand_ok("a[1-2]b,c"), (Names{"a1b", "a2b", "c"}));
  EXPECT_EQ(expand_ok("a,b"), (Names{"a", "b"}));
  EXPECT_EQ(expand_ok("tux1"), (Names{"tux1"}));
  EXPECT_EQ(expand_ok("gpu[1-2]-ib,cpu[3,5]"), (Names{"gpu1-ib", "gpu2-ib", "cpu3", "cpu5"}));
}

TEST(SlurmHostlist, SeveralGroupsFirstVariesSlowest) {
  EXPECT_EQ(expand_ok("r[1-2]n[1-2]"), (Names{"r1n1", "r1n2", "r2n1", "r2n2"}));
  EXPECT_EQ(expand_ok("r[1-2]n[01,03]x"), (Names{"r1n01x", "r1n03x", "r2n01x", "r2n03x"}));
}

TEST(SlurmHostlist, BadExpressionsQuoteTheToken) {
  EXPECT_EQ(expand_error("node[4-2]"), "bad range '4-2' in 'node[4-2]' (low end above high end)");
  EXPECT_EQ(expand_error("node[1-a]"), "bad range '1-a' in 'node[1-a]' (expected N or N-M)");
  EXPECT_EQ(expand_error("node[1,]"), "bad range '' in 'node[1,]' (expected N or N-M)");
  EXPECT_EQ(expand_error("node[01-"), "missing ']' in 'node[01-'");
  EXPECT_EQ(expand_error("node]1"), "unmatched ']' in 'node]1'");
  EXPECT_EQ(expand_error("a,,b"), "empty host name in 'a,,b'");
  EXPECT_EQ(expand_error(""), "empty host list");
  EXPECT_NE(expand_error("n[[1]]").find("'n[[1]]'"), std::string::npos);
  EXPECT_NE(expand_error("n[0-99999999]").find("too long"), std::string::npos);
  EXPECT_NE(expand_error("r[0-9999]n[0-9999]").find("more than"), std::string::npos);
  // One range alone past the limit (a fuzzer found that 900,000 names took seconds).
  EXPECT_EQ(expand_error("r[14-909009]0"), "range '14-909009' in 'r[14-909009]0' is too long");
  EXPECT_EQ(expand_hostlist("r[1-131072]")->size(), 131072u);
  EXPECT_NE(expand_error("-n[1-2]").find("bad host name '-n1'"), std::string::npos);
}

TEST(SlurmTasks, CompressedCounts) {
  auto counts = expand_tasks_per_node("4(x3),2");
  ASSERT_TRUE(counts.ok()) << counts.error().message;
  EXPECT_EQ(*counts, (std::vector<int>{4, 4, 4, 2}));
  auto one = expand_tasks_per_node("8");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(*one, (std::vector<int>{8}));
  auto mixed = expand_tasks_per_node("2,1(x2),3");
  ASSERT_TRUE(mixed.ok());
  EXPECT_EQ(*mixed, (std::vector<int>{2, 1, 1, 3}));
}

TEST(SlurmTasks, BadItemsAreNamed) {
  for (const char* bad : {"4(x0)", "(x3)", "4(3)", "0", "4(x3", "x", "4(x3)5", "-1"}) {
    auto counts = expand_tasks_per_node(bad);
    ASSERT_FALSE(counts.ok()) << bad;
    EXPECT_EQ(counts.error().message, std::string("bad item '") + bad + "' in '" + bad +
                                          "' (expected N or N(xM), N and M positive)");
  }
  auto empty_item = expand_tasks_per_node("4,,2");
  ASSERT_FALSE(empty_item.ok());
  EXPECT_NE(empty_item.error().message.find("bad item '' in '4,,2'"), std::string::npos);
}

TEST(SlurmAllocation, NodesWithTheirTaskCounts) {
  auto hosts = hosts_from_slurm(
      Env{{"SLURM_JOB_NODELIST", "node[01-04]"}, {"SLURM_TASKS_PER_NODE", "4(x3),2"}});
  ASSERT_TRUE(hosts.ok()) << hosts.error().message;
  ASSERT_EQ(hosts->size(), 4u);
  EXPECT_EQ((*hosts)[0].name, "node01");
  EXPECT_EQ((*hosts)[0].slots, 4);
  EXPECT_EQ((*hosts)[3].name, "node04");
  EXPECT_EQ((*hosts)[3].slots, 2);
  EXPECT_EQ((*hosts)[0].origin, "SLURM_JOB_NODELIST");
  EXPECT_EQ((*hosts)[0].port, 0);
}

TEST(SlurmAllocation, FallbackVariables) {
  auto old_name = hosts_from_slurm(Env{{"SLURM_NODELIST", "a,b"}});
  ASSERT_TRUE(old_name.ok()) << old_name.error().message;
  ASSERT_EQ(old_name->size(), 2u);
  EXPECT_EQ((*old_name)[1].slots, 1);
  EXPECT_EQ((*old_name)[1].origin, "SLURM_NODELIST");

  auto per_node =
      hosts_from_slurm(Env{{"SLURM_JOB_NODELIST", "n[1-3]"}, {"SLURM_NTASKS_PER_NODE", "2"}});
  ASSERT_TRUE(per_node.ok()) << per_node.error().message;
  ASSERT_EQ(per_node->size(), 3u);
  for (const HostEntry& h : *per_node) EXPECT_EQ(h.slots, 2);

  auto job_wins = hosts_from_slurm(Env{{"SLURM_JOB_NODELIST", "x1"},
                                       {"SLURM_NODELIST", "y1"},
                                       {"SLURM_TASKS_PER_NODE", "3"},
                                       {"SLURM_NTASKS_PER_NODE", "7"}});
  ASSERT_TRUE(job_wins.ok());
  EXPECT_EQ((*job_wins)[0].name, "x1");
  EXPECT_EQ((*job_wins)[0].slots, 3);
}

TEST(SlurmAllocation, ErrorsNameTheVariable) {
  auto none = hosts_from_slurm(Env{});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("SLURM_JOB_NODELIST is not set"), std::string::npos);

  auto bad_list = hosts_from_slurm(Env{{"SLURM_JOB_NODELIST", "node[4-2]"}});
  ASSERT_FALSE(bad_list.ok());
  EXPECT_EQ(bad_list.error().message,
            "SLURM_JOB_NODELIST: bad range '4-2' in 'node[4-2]' (low end above high end)");

  auto bad_tasks = hosts_from_slurm(Env{{"SLURM_NODELIST", "a"}, {"SLURM_TASKS_PER_NODE", "4(x)"}});
  ASSERT_FALSE(bad_tasks.ok());
  EXPECT_TRUE(bad_tasks.error().message.starts_with("SLURM_TASKS_PER_NODE: bad item '4(x)'"))
      << bad_tasks.error().message;

  auto mismatch = hosts_from_slurm(
      Env{{"SLURM_JOB_NODELIST", "node[01-04]"}, {"SLURM_TASKS_PER_NODE", "4(x3)"}});
  ASSERT_FALSE(mismatch.ok());
  EXPECT_EQ(mismatch.error().message,
            "SLURM_TASKS_PER_NODE '4(x3)' gives 3 counts for the 4 nodes of "
            "SLURM_JOB_NODELIST 'node[01-04]'");

  auto bad_per_node =
      hosts_from_slurm(Env{{"SLURM_JOB_NODELIST", "a"}, {"SLURM_NTASKS_PER_NODE", "two"}});
  ASSERT_FALSE(bad_per_node.ok());
  EXPECT_EQ(bad_per_node.error().message,
            "SLURM_NTASKS_PER_NODE: bad value 'two' (expected a positive integer)");
}

}  // namespace
}  // namespace ferry

namespace ferry {
namespace {

// A ferryd started by srun is a task of its own step; its ranks must not look like one.
TEST(SlurmStepVariables, StepIdentityGoesJobStays) {
  for (const char* step :
       {"SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID", "SLURM_NTASKS", "SLURM_NPROCS",
        "SLURM_STEP_ID", "SLURM_STEP_NODELIST", "SLURM_STEP_NUM_TASKS", "SLURM_STEPID",
        "SLURM_TASK_PID", "SLURM_CPU_BIND", "SLURM_CPU_BIND_LIST", "SLURM_GTIDS",
        "SLURM_LAUNCH_NODE_IPADDR", "SLURM_SRUN_COMM_PORT"})
    EXPECT_TRUE(is_slurm_step_variable(step)) << step;
  for (const char* job :
       {"SLURM_JOB_ID", "SLURM_JOB_NODELIST", "SLURM_JOB_NUM_NODES", "SLURM_CLUSTER_NAME",
        "SLURM_JOB_PARTITION", "SLURM_CPUS_PER_TASK", "SLURM_SUBMIT_DIR", "PATH", "SLURM"})
    EXPECT_FALSE(is_slurm_step_variable(job)) << job;
}

}  // namespace
}  // namespace ferry
