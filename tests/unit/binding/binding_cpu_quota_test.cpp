// The cgroup CPU quota: read from fake cgroup v1 and v2 trees, and its effect on the thread
// variables (never on the cpu masks), the warnings, --verbose notes and --report-bindings.
#include <gtest/gtest.h>

#include "binding_fake_root.hpp"
#include "ferry/binding/cpu_quota.hpp"
#include "ferry/binding/host_binder.hpp"
#include "ferry/binding/report.hpp"

namespace ferry {
namespace {

using test_support::FakeRoot;
using test_support::has_env;
using test_support::has_var;
using test_support::mentions;
using test_support::x86;

CpuQuota quota(long long q, long long p = 100000) {
  return CpuQuota{q, p, CgroupVersion::kV2, "/sys/fs/cgroup/cpu.max"};
}

// ---- cgroup v2 -----------------------------------------------------------------------------

TEST(CpuQuotaV2, MaxIsNoLimit) {
  FakeRoot r;
  r.proc_self_cgroup("0::/\n");
  r.cpu_max("", "max 100000\n");
  EXPECT_FALSE(read_cpu_quota(r.path()).has_value());
}

TEST(CpuQuotaV2, ContainerRootLimit) {  // docker --cpus=2.5 with a private cgroup namespace
  FakeRoot r;
  r.proc_self_cgroup("0::/\n");
  r.cpu_max("", "250000 100000\n");
  auto q = read_cpu_quota(r.path());
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->quota_us, 250000);
  EXPECT_EQ(q->period_us, 100000);
  EXPECT_EQ(q->version, CgroupVersion::kV2);
  EXPECT_EQ(q->file, "/sys/fs/cgroup/cpu.max");
  EXPECT_DOUBLE_EQ(q->cpus(), 2.5);
  EXPECT_EQ(q->cpus_text(), "2.5");
  EXPECT_EQ(q->source(), "cgroup v2 /sys/fs/cgroup/cpu.max: 250000/100000");
}

TEST(CpuQuotaV2, SmallestLimitOnThePathWins) {
  FakeRoot r;
  r.proc_self_cgroup("0::/kubepods.slice/pod1/ctr\n");
  r.cpu_max("kubepods.slice/pod1/ctr", "max 100000\n");
  r.cpu_max("kubepods.slice/pod1", "800000 100000\n");
  r.cpu_max("kubepods.slice", "400000 100000\n");
  r.cpu_max("kubepods.slice/other", "100000 100000\n");  // a sibling: not on the path
  auto q = read_cpu_quota(r.path());
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->cpus_text(), "4");
  EXPECT_EQ(q->file, "/sys/fs/cgroup/kubepods.slice/cpu.max");
}

TEST(CpuQuotaV2, LeafSmallerThanParentAndPeriodsDiffer) {
  FakeRoot r;
  r.proc_self_cgroup("0::/a/b\n");
  r.cpu_max("a/b", "50000 10000\n");  // 5 CPUs
  r.cpu_max("a", "600000 100000\n");  // 6 CPUs
  auto q = read_cpu_quota(r.path());
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->quota_us, 50000);
  EXPECT_EQ(q->period_us, 10000);
  EXPECT_EQ(q->threads_per_rank(1), 5);
}

TEST(CpuQuotaV2, HostPathMissingFallsBackToTheMountRoot) {
  // /proc/self/cgroup names the host's path, the mount shows only the container's cgroup.
  FakeRoot r;
  r.proc_self_cgroup("0::/system.slice/docker-0123abcd.scope\n");
  r.cpu_max("", "200000 100000\n");
  auto q = read_cpu_quota(r.path());
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->cpus_text(), "2");
  EXPECT_EQ(q->file, "/sys/fs/cgroup/cpu.max");
}

TEST(CpuQuotaV2, TrailingPartOfTheHostPathIsUsedWhenItExists) {
  FakeRoot r;
  r.proc_self_cgroup("0::/docker/0123abcd/init.scope\n");
  r.cpu_max("init.scope", "100000 100000\n");
  r.cpu_max("", "300000 100000\n");
  auto q = read_cpu_quota(r.path());
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->file, "/sys/fs/cgroup/init.scope/cpu.max");
  EXPECT_EQ(q->cpus_text(), "1");
}

// ---- cgroup v1 -----------------------------------------------------------------------------

TEST(CpuQuotaV1, UnlimitedIsMinusOne) {
  FakeRoot r;
  r.proc_self_cgroup("4:cpu,cpuacct:/\n3:memory:/\n0::/\n");
  r.cfs("cpu,cpuacct", "", "-1\n");
  EXPECT_FALSE(read_cpu_quota(r.path()).has_value());
}

TEST(CpuQuotaV1, DockerContainerAtTheMountRoot) {
  FakeRoot r;
  r.proc_self_cgroup("12:memory:/docker/0123abcd\n4:cpu,cpuacct:/docker/0123abcd\n");
  r.cfs("cpu,cpuacct", "", "150000\n");
  auto q = read_cpu_quota(r.path());
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->version, CgroupVersion::kV1);
  EXPECT_EQ(q->file, "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us");
  EXPECT_EQ(q->cpus_text(), "1.5");
}

TEST(CpuQuotaV1, HostPathWithAParentLimit) {  // Kubernetes pod limit above the container's
  FakeRoot r;
  r.proc_self_cgroup("4:cpu,cpuacct:/kubepods/burstable/pod1/ctr\n");
  r.cfs("cpu,cpuacct", "kubepods/burstable/pod1/ctr", "-1\n");
  r.cfs("cpu,cpuacct", "kubepods/burstable/pod1", "300000\n");
  r.cfs("cpu,cpuacct", "kubepods/burstable", "-1\n");
  auto q = read_cpu_quota(r.path());
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->file, "/sys/fs/cgroup/cpu,cpuacct/kubepods/burstable/pod1/cpu.cfs_quota_us");
  EXPECT_EQ(q->cpus_text(), "3");
}

TEST(CpuQuotaV1, MountNameVariants) {
  {  // separate cpu and cpuacct hierarchies, as on this project's CI hosts
    FakeRoot r;
    r.proc_self_cgroup("2:cpuacct:/\n1:cpu:/\n0::/\n");
    r.cfs("cpuacct", "", "100000\n");  // not the cpu controller: ignored
    r.remove("sys/fs/cgroup/cpuacct");
    r.cfs("cpu", "", "400000\n");
    auto q = read_cpu_quota(r.path());
    ASSERT_TRUE(q.has_value());
    EXPECT_EQ(q->file, "/sys/fs/cgroup/cpu/cpu.cfs_quota_us");
  }
  {  // the line says cpuacct,cpu but the mount is named cpu,cpuacct
    FakeRoot r;
    r.proc_self_cgroup("3:cpuacct,cpu:/\n");
    r.cfs("cpu,cpuacct", "", "200000\n");
    auto q = read_cpu_quota(r.path());
    ASSERT_TRUE(q.has_value());
    EXPECT_EQ(q->cpus_text(), "2");
  }
  {  // only a "cpu" mount for a joint cpu,cpuacct line
    FakeRoot r;
    r.proc_self_cgroup("3:cpu,cpuacct:/\n");
    r.cfs("cpu", "", "700000\n", "200000\n");
    auto q = read_cpu_quota(r.path());
    ASSERT_TRUE(q.has_value());
    EXPECT_EQ(q->cpus_text(), "3.5");
  }
  {  // no cpu line at all
    FakeRoot r;
    r.proc_self_cgroup("2:cpuacct:/\n3:memory:/\n");
    r.cfs("cpuacct", "", "100000\n");
    EXPECT_FALSE(read_cpu_quota(r.path()).has_value());
  }
}

TEST(CpuQuotaHybrid, TheSmallerOfBothVersions) {
  FakeRoot r;
  r.proc_self_cgroup("1:cpu,cpuacct:/\n0::/\n");
  r.cfs("cpu,cpuacct", "", "600000\n");
  r.cpu_max("", "300000 100000\n");
  auto q = read_cpu_quota(r.path());
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->version, CgroupVersion::kV2);
  EXPECT_EQ(q->cpus_text(), "3");
  r.cpu_max("", "max 100000\n");
  q = read_cpu_quota(r.path());
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->version, CgroupVersion::kV1);
  EXPECT_EQ(q->cpus_text(), "6");
}

// ---- what is not a quota -------------------------------------------------------------------

TEST(CpuQuotaGarbage, NoFilesIsNoQuota) {
  FakeRoot empty;  // what the existing FERRY_TEST_DEVICE_ROOT trees look like
  EXPECT_FALSE(read_cpu_quota(empty.path()).has_value());
  EXPECT_FALSE(read_cpu_quota(empty.path() + "/does-not-exist").has_value());
  FakeRoot no_mount;
  no_mount.proc_self_cgroup("0::/\n");
  EXPECT_FALSE(read_cpu_quota(no_mount.path()).has_value());
}

TEST(CpuQuotaGarbage, UnparsableCpuMaxIsIgnoredAndDoesNotHideAParent) {
  const std::string bad[] = {"",
                             "\n",
                             "max",
                             "100000",
                             "abc 100000",
                             "100000 abc",
                             "0x100 100000",
                             "1e5 100000",
                             "100000.5 100000",
                             "0 100000",
                             "-100000 100000",
                             "100000 0",
                             "100000 -100000",
                             "100000 500",       // period below the kernel's 1 ms
                             "100000 5000000",   // period above 1 s
                             "100000 100000 7",  // not the kernel's format
                             "99999999999999999999999 100000",
                             std::string("\0\1\2 \xff", 5)};
  for (const auto& text : bad) {
    FakeRoot r;
    r.proc_self_cgroup("0::/leaf\n");
    r.cpu_max("leaf", text);
    EXPECT_FALSE(read_cpu_quota(r.path()).has_value()) << "cpu.max: " << text;
    r.cpu_max("", "200000 100000\n");
    auto q = read_cpu_quota(r.path());
    ASSERT_TRUE(q.has_value()) << "cpu.max: " << text;
    EXPECT_EQ(q->file, "/sys/fs/cgroup/cpu.max") << "cpu.max: " << text;
  }
}

TEST(CpuQuotaGarbage, UnparsableCfsFilesAreIgnored) {
  const std::pair<std::string, std::string> bad[] = {
      {"", "100000"},  {"abc", "100000"}, {"-2", "100000"},  {"0", "100000"},   {"100000", ""},
      {"100000", "0"}, {"100000", "x"},   {"1 2", "100000"}, {"100000", "1 2"}, {"-1", "100000"}};
  for (const auto& [quota_text, period_text] : bad) {
    FakeRoot r;
    r.proc_self_cgroup("4:cpu,cpuacct:/\n");
    r.cfs("cpu,cpuacct", "", quota_text, period_text);
    EXPECT_FALSE(read_cpu_quota(r.path()).has_value()) << quota_text << " / " << period_text;
  }
  FakeRoot missing_period;
  missing_period.proc_self_cgroup("4:cpu,cpuacct:/\n");
  missing_period.cfs("cpu,cpuacct", "", "200000\n");
  missing_period.remove("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us");
  EXPECT_FALSE(read_cpu_quota(missing_period.path()).has_value());
}

TEST(CpuQuotaGarbage, OddProcSelfCgroup) {
  const std::string bad[] = {"",
                             "garbage without colons\n",
                             "0::relative/path\n",     // not absolute
                             "0::/../../elsewhere\n",  // outside our cgroup namespace
                             "7:cpu\n",
                             std::string("\0\0\0", 3)};
  for (const auto& text : bad) {
    FakeRoot r;
    r.proc_self_cgroup(text);
    r.cpu_max("", "200000 100000\n");
    r.cfs("cpu", "", "200000\n");
    EXPECT_FALSE(read_cpu_quota(r.path()).has_value()) << "proc/self/cgroup: " << text;
  }
  // A path with colons is still one path.
  FakeRoot colons;
  colons.proc_self_cgroup("0::/a:b\n");
  colons.cpu_max("a:b", "100000 100000\n");
  auto q = read_cpu_quota(colons.path());
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->file, "/sys/fs/cgroup/a:b/cpu.max");
}

TEST(CpuQuotaGarbage, DirectoryInsteadOfAFile) {
  FakeRoot r;
  r.proc_self_cgroup("0::/\n");
  r.file("sys/fs/cgroup/cpu.max/inside", "200000 100000\n");
  EXPECT_FALSE(read_cpu_quota(r.path()).has_value());
  FakeRoot p;
  p.file("proc/self/cgroup/inside", "0::/\n");
  p.cpu_max("", "200000 100000\n");
  EXPECT_FALSE(read_cpu_quota(p.path()).has_value());
}

// ---- arithmetic ----------------------------------------------------------------------------

TEST(CpuQuotaArithmetic, ThreadsAreTheFloorOfTheShareAtLeastOne) {
  EXPECT_EQ(quota(250000).threads_per_rank(1), 2);  // 2.5 CPUs, 1 rank: 2, never throttled
  EXPECT_EQ(quota(250000).threads_per_rank(2), 1);
  EXPECT_EQ(quota(250000).threads_per_rank(3), 1);  // less than one CPU each: still 1
  EXPECT_EQ(quota(800000).threads_per_rank(4), 2);
  EXPECT_EQ(quota(800000).threads_per_rank(3), 2);
  EXPECT_EQ(quota(12800000).threads_per_rank(4), 32);
  EXPECT_EQ(quota(299999).threads_per_rank(1), 2);
  EXPECT_EQ(quota(300000).threads_per_rank(1), 3);
  EXPECT_EQ(quota(1000, 1000000).threads_per_rank(1), 1);
}

TEST(CpuQuotaArithmetic, TextAndComparison) {
  EXPECT_EQ(quota(800000).cpus_text(), "8");
  EXPECT_EQ(quota(50000).cpus_text(), "0.5");
  EXPECT_EQ(quota(12500).cpus_text(), "0.125");
  EXPECT_EQ(quota(1000, 1000000).cpus_text(), "0.001");
  EXPECT_EQ(quota(33333).cpus_text(), "0.333");
  EXPECT_TRUE(quota(250000).less_than(3));
  EXPECT_FALSE(quota(250000).less_than(2));
  EXPECT_FALSE(quota(300000).less_than(3));
  EXPECT_TRUE(quota(299999).less_than(3));
}

// ---- effect on the plan --------------------------------------------------------------------

HostBindingPlan plan(int ranks, std::optional<CpuQuota> q, BindingOptions o = {},
                     std::vector<std::string> env = {}) {
  auto p = plan_bindings(x86(), {}, o, ranks, env_lookup_from(std::move(env)), q);
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message);
  return p.ok() ? std::move(p.value()) : HostBindingPlan{};
}

TEST(CpuQuotaPlan, QuotaLowersThreadsButNotTheMasks) {  // 48 cores, 8-CPU quota, 4 ranks
  auto free = plan(4, std::nullopt);
  auto limited = plan(4, quota(800000));
  ASSERT_EQ(limited.ranks.size(), 4u);
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(free.ranks[k].threads, 12);
    EXPECT_EQ(limited.ranks[k].threads, 2);
    EXPECT_TRUE(limited.ranks[k].threads_capped_by_quota);
    EXPECT_FALSE(free.ranks[k].threads_capped_by_quota);
    EXPECT_TRUE(has_env(limited.ranks[k], "OMP_NUM_THREADS=2"));
    EXPECT_TRUE(has_env(limited.ranks[k], "MKL_NUM_THREADS=2"));
    EXPECT_TRUE(has_env(limited.ranks[k], "OPENBLAS_NUM_THREADS=2"));
    EXPECT_TRUE(limited.ranks[k].bound);
    EXPECT_EQ(limited.ranks[k].cpu_list, free.ranks[k].cpu_list);
    EXPECT_EQ(limited.ranks[k].cores, 12);
  }
  EXPECT_EQ(limited.policy, free.policy);
  EXPECT_TRUE(limited.warnings.empty());  // 4 ranks fit 8 CPUs
  EXPECT_TRUE(mentions(limited.notes, "CPU quota 8 CPUs (cgroup v2 /sys/fs/cgroup/cpu.max"));
  EXPECT_TRUE(mentions(limited.notes, "at most 2 threads per rank for 4 local ranks"));
  EXPECT_TRUE(mentions(limited.notes, "set to 2 (CPU quota 8 CPUs / 4 local ranks"));
  EXPECT_FALSE(mentions(free.notes, "CPU quota"));
}

TEST(CpuQuotaPlan, QuotaAboveTheCoresChangesNothing) {
  auto p = plan(4, quota(6400000));  // 64 CPUs of time on 48 cores
  for (const auto& r : p.ranks) {
    EXPECT_EQ(r.threads, 12);
    EXPECT_FALSE(r.threads_capped_by_quota);
  }
  EXPECT_TRUE(mentions(p.notes, "thread counts unaffected"));
  EXPECT_TRUE(p.warnings.empty());
}

TEST(CpuQuotaPlan, UnboundRanksUseTheSmallerOfCoresAndQuota) {
  BindingOptions none;
  none.bind_to = BindTo::kNone;
  auto p = plan(2, quota(650000), none);  // floor(min(48, 6.5) / 2) = 3
  for (const auto& r : p.ranks) {
    EXPECT_FALSE(r.bound);
    EXPECT_EQ(r.cpu_list, "0-95");
    EXPECT_EQ(r.threads, 3);
    EXPECT_TRUE(has_env(r, "OMP_NUM_THREADS=3"));
  }
  EXPECT_TRUE(mentions(p.notes, "below allowed cores / local ranks"));
}

TEST(CpuQuotaPlan, MoreRanksThanTheQuotaWarnsAndGivesOneThread) {
  auto p = plan(3, quota(200000));
  for (const auto& r : p.ranks) {
    EXPECT_EQ(r.threads, 1);
    EXPECT_TRUE(r.bound);  // 3 ranks still get 16 cores each to run on
    EXPECT_EQ(r.cores, 16);
  }
  EXPECT_TRUE(mentions(p.warnings, "3 local ranks on a 2-CPU quota: oversubscribed"));
  EXPECT_TRUE(mentions(p.warnings, "cgroup v2 /sys/fs/cgroup/cpu.max: 200000/100000"));
  // Fractional: 3 ranks on 2.5 CPUs are oversubscribed, 2 ranks on 2.5 are not.
  EXPECT_TRUE(mentions(plan(3, quota(250000)).warnings, "on a 2.5-CPU quota"));
  EXPECT_TRUE(plan(2, quota(250000)).warnings.empty());
  // One rank on half a CPU: nothing for it to compete with, no warning, 1 thread.
  auto one = plan(1, quota(50000));
  EXPECT_TRUE(one.warnings.empty());
  EXPECT_EQ(one.ranks[0].threads, 1);
}

TEST(CpuQuotaPlan, UserThreadVariablesStillWin) {
  auto p = plan(2, quota(400000), {}, {"OMP_NUM_THREADS=16"});
  for (const auto& r : p.ranks) {
    EXPECT_FALSE(has_var(r, "OMP_NUM_THREADS"));
    EXPECT_TRUE(has_env(r, "MKL_NUM_THREADS=2"));
  }
}

TEST(CpuQuotaPlan, CpusPerRankKeepsItsCoresButNotItsThreads) {
  BindingOptions o;
  o.cpus_per_rank = 8;
  auto p = plan(2, quota(400000), o);
  for (const auto& r : p.ranks) {
    EXPECT_EQ(r.cores, 8);
    EXPECT_EQ(r.threads, 2);
    EXPECT_TRUE(has_env(r, "OMP_NUM_THREADS=2"));
  }
}

TEST(CpuQuotaPlan, BindToNumaNodesAreCappedToo) {
  BindingOptions o;
  o.bind_to = BindTo::kNuma;
  auto p = plan(2, quota(1000000), o);  // whole 24-core node each, 10 CPUs of time
  for (const auto& r : p.ranks) {
    EXPECT_EQ(r.cores, 24);
    EXPECT_EQ(r.threads, 5);
  }
}

TEST(CpuQuotaReport, SaysWhenTheQuotaLoweredTheThreads) {
  auto limited = plan(4, quota(800000));
  const std::string line = format_binding_report("k8s-0", 5, limited.ranks[1], limited);
  EXPECT_EQ(line,
            "k8s-0 rank 5 local_rank 1: cpus 12-23,60-71 (12 cores) NUMA 0, no device, "
            "2 threads (CPU quota 8)");
  auto free = plan(4, std::nullopt);
  EXPECT_EQ(format_binding_report("k8s-0", 5, free.ranks[1], free).find("thread"),
            std::string::npos);
  auto big = plan(4, quota(6400000));
  EXPECT_EQ(format_binding_report("k8s-0", 5, big.ranks[1], big).find("thread"), std::string::npos);
  // The user set every thread variable: ferry's count is not what the rank runs with.
  auto user = plan(4, quota(800000), {},
                   {"OMP_NUM_THREADS=4", "MKL_NUM_THREADS=4", "OPENBLAS_NUM_THREADS=4"});
  EXPECT_EQ(format_binding_report("k8s-0", 5, user.ranks[1], user).find("thread"),
            std::string::npos);
  auto single = plan(3, quota(200000));
  EXPECT_NE(format_binding_report("h", 0, single.ranks[0], single).find(", 1 thread (CPU quota 2)"),
            std::string::npos);
}

// ---- ferryd's HostBinder: the quota comes from the same root as the devices ----------------

TEST(CpuQuotaHostBinder, ReadsTheQuotaBesideTheDevices) {
  FakeRoot root;
  root.proc_self_cgroup("0::/\n");
  root.cpu_max("", "100000 100000\n");
  root.file("dev/davinci0", "");
  HostBinder b;
  b.load(root.path());
  EXPECT_NE(b.summary().find("; CPU quota 1 CPU"), std::string::npos) << b.summary();

  FakeRoot plain;  // a device tree without cgroup files: no quota, as before
  plain.file("dev/davinci0", "");
  HostBinder p;
  p.load(plain.path());
  EXPECT_EQ(p.summary().find("CPU quota"), std::string::npos) << p.summary();

  BindingOptions none;
  none.bind_to = BindTo::kNone;
  std::vector<std::string> lines, plain_lines;
  auto with = b.plan(none, 1, {}, "h", true, lines);
  auto without = p.plan(none, 1, {}, "h", true, plain_lines);
  ASSERT_TRUE(with.ok());
  ASSERT_TRUE(without.ok());
  if (b.summary().starts_with("no CPU topology")) GTEST_SKIP() << b.summary();
  EXPECT_EQ(with->ranks[0].threads, 1);
  EXPECT_TRUE(has_env(with->ranks[0], "OMP_NUM_THREADS=1"));
  EXPECT_EQ(with->ranks[0].cpu_list, without->ranks[0].cpu_list);
  EXPECT_TRUE(mentions(lines, "h: CPU quota 1 CPU (cgroup v2 /sys/fs/cgroup/cpu.max"));
  EXPECT_FALSE(mentions(plain_lines, "CPU quota"));
  if (without->ranks[0].threads > 1) {
    EXPECT_TRUE(with->ranks[0].threads_capped_by_quota);
  }
}

}  // namespace
}  // namespace ferry
