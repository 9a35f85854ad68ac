#include <gtest/gtest.h>

#include <algorithm>

#include "ferry/binding/id_list.hpp"
#include "ferry/binding/plan.hpp"

namespace ferry {
namespace {

const std::string kX86Xml = std::string(FERRY_TEST_DATA) + "/binding/x86-2socket-24core-ht.xml";

Topology synthetic(const std::string& desc) {
  auto t = Topology::load_synthetic(desc);
  EXPECT_TRUE(t.ok()) << desc;
  return std::move(t.value());
}

Topology x86() {  // 2 sockets x 24 cores x 2 threads, one NUMA node per socket, cpus 0-95
  auto t = Topology::load_xml(kX86Xml);
  EXPECT_TRUE(t.ok());
  return std::move(t.value());
}

Topology container_slice() {  // --cpuset-cpus=20-25,68-73 of x86(): 4 cores on NUMA 0, 2 on 1
  Topology t = x86();
  EXPECT_TRUE(t.restrict_to(*parse_id_list("20-25,68-73")).ok());
  return t;
}

HostBindingPlan plan(const Topology& t, int ranks, BindingOptions opt = {},
                     std::vector<std::string> env = {}) {
  auto p = plan_bindings(t, {}, opt, ranks, env_lookup_from(std::move(env)));
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message);
  return p.ok() ? std::move(p.value()) : HostBindingPlan{};
}

std::string error_of(const Topology& t, int ranks, BindingOptions opt) {
  auto p = plan_bindings(t, {}, opt, ranks, env_lookup_from({}));
  return p.ok() ? "" : p.error().message;
}

bool has_env(const RankBinding& r, const std::string& kv) {
  return std::find(r.env.begin(), r.env.end(), kv) != r.env.end();
}

bool mentions(const std::vector<std::string>& lines, const std::string& text) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& l) { return l.find(text) != std::string::npos; });
}

TEST(BindingPlan, DefaultGivesEachRankAWholeSocketOnTwoSocketX86) {
  auto p = plan(x86(), 2);
  ASSERT_EQ(p.ranks.size(), 2u);
  EXPECT_TRUE(p.ranks[0].bound);
  EXPECT_EQ(p.ranks[0].cpu_list, "0-23,48-71");
  EXPECT_EQ(p.ranks[1].cpu_list, "24-47,72-95");
  EXPECT_EQ(p.ranks[0].cores, 24);
  EXPECT_EQ(p.ranks[1].numa_list, "1");
  EXPECT_EQ(p.ranks[1].threads, 24);
  EXPECT_TRUE(has_env(p.ranks[1], "OMP_NUM_THREADS=24"));
  EXPECT_TRUE(has_env(p.ranks[1], "MKL_NUM_THREADS=24"));
  EXPECT_TRUE(has_env(p.ranks[1], "OPENBLAS_NUM_THREADS=24"));
  EXPECT_FALSE(p.ranks[0].strict);
  EXPECT_TRUE(p.warnings.empty());
}

TEST(BindingPlan, MaskMatchesTheCpuList) {
  auto p = plan(x86(), 4);
  for (const auto& r : p.ranks) {
    EXPECT_EQ(CPU_COUNT(&r.cpu_mask), static_cast<int>(r.cpus.size()));
    for (int cpu : r.cpus) EXPECT_TRUE(CPU_ISSET(cpu, &r.cpu_mask));
  }
  EXPECT_EQ(p.ranks[1].cpu_list, "12-23,60-71");
}

TEST(BindingPlan, Arm96CoresEightRanksTwoPerNumaNode) {
  // The seed's taskset loop: KERNEL_NUM = nproc / 8, rank i on [i*K, (i+1)*K - 1].
  auto p = plan(synthetic("numa:4 core:24 pu:1"), 8);
  ASSERT_EQ(p.ranks.size(), 8u);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(p.ranks[i].cpu_list, std::to_string(12 * i) + "-" + std::to_string(12 * i + 11));
    EXPECT_EQ(p.ranks[i].numa_list, std::to_string(i / 2));
    EXPECT_EQ(p.ranks[i].threads, 12);
  }
}

TEST(BindingPlan, SpreadsBlocksEvenlyOverNumaNodesWithoutSplitting) {
  // 14 ranks x 6 cores on 4 NUMA nodes of 24: 4,4,3,3 per node, not 6,6,2 in core order.
  auto p = plan(synthetic("numa:4 core:24 pu:1"), 14);
  std::vector<int> per_node(4, 0);
  for (const auto& r : p.ranks) {
    ASSERT_EQ(r.numa_nodes.size(), 1u) << "rank " << r.local_rank << " split: " << r.cpu_list;
    EXPECT_EQ(r.cores, 6);
    ++per_node[r.numa_nodes[0]];
  }
  EXPECT_EQ(per_node, (std::vector<int>{4, 4, 3, 3}));
  EXPECT_EQ(p.ranks[4].cpu_list, "24-29");
  EXPECT_EQ(p.ranks[8].cpu_list, "48-53");
  EXPECT_EQ(p.ranks[13].cpu_list, "84-89");
}

TEST(BindingPlan, FallsBackToCoreOrderWhenNoEvenSplitExists) {
  // 5 ranks x 19 cores cannot sit in 24-core NUMA nodes without splitting.
  auto p = plan(synthetic("numa:4 core:24 pu:1"), 5);
  EXPECT_EQ(p.ranks[0].cpu_list, "0-18");
  EXPECT_EQ(p.ranks[1].cpu_list, "19-37");
  EXPECT_EQ(p.ranks[1].numa_list, "0-1");
  EXPECT_EQ(p.ranks[4].cpu_list, "76-94");
  EXPECT_NE(p.policy.find("core order"), std::string::npos) << p.policy;
}

TEST(BindingPlan, Arm192CoresOneRankPerNumaNodeOrHalves) {
  auto t = synthetic("numa:8 core:24 pu:1");
  auto p8 = plan(t, 8);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(p8.ranks[i].numa_list, std::to_string(i));
  EXPECT_EQ(p8.ranks[7].cpu_list, "168-191");
  auto p16 = plan(t, 16);
  EXPECT_EQ(p16.ranks[15].cpu_list, "180-191");
  EXPECT_EQ(p16.ranks[15].threads, 12);
}

TEST(BindingPlan, ContainerSliceAlignsWhenItCan) {
  auto t = container_slice();
  // 3 ranks x 2 cores: two fit NUMA 0 (cores 20-23), one NUMA 1 (24-25): no split.
  auto p3 = plan(t, 3);
  EXPECT_EQ(p3.ranks[0].cpu_list, "20-21,68-69");
  EXPECT_EQ(p3.ranks[1].cpu_list, "22-23,70-71");
  EXPECT_EQ(p3.ranks[2].cpu_list, "24-25,72-73");
  EXPECT_EQ(p3.ranks[2].numa_list, "1");
  // 2 ranks x 3 cores: NUMA 1 holds only 2 cores, so one block must straddle.
  auto p2 = plan(t, 2);
  EXPECT_EQ(p2.ranks[0].cpu_list, "20-22,68-70");
  EXPECT_EQ(p2.ranks[1].cpu_list, "23-25,71-73");
}

TEST(BindingPlan, OversubscribedHostRunsUnboundWithOneThreadAndAWarning) {
  auto p = plan(container_slice(), 8);
  ASSERT_EQ(p.ranks.size(), 8u);
  for (const auto& r : p.ranks) {
    EXPECT_FALSE(r.bound);
    EXPECT_EQ(r.cpu_list, "20-25,68-73");
    EXPECT_TRUE(has_env(r, "OMP_NUM_THREADS=1"));
  }
  ASSERT_EQ(p.warnings.size(), 1u);
  EXPECT_NE(p.warnings[0].find("8 local ranks on 6 allowed cores"), std::string::npos);
}

TEST(BindingPlan, UserThreadVariablesAreNeverOverridden) {
  auto p = plan(x86(), 2, {}, {"PATH=/bin", "OMP_NUM_THREADS=3"});
  EXPECT_FALSE(has_env(p.ranks[0], "OMP_NUM_THREADS=24"));
  EXPECT_TRUE(has_env(p.ranks[0], "MKL_NUM_THREADS=24"));
  EXPECT_EQ(p.defaulted_env, (std::vector<std::string>{"MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"}));
  EXPECT_TRUE(mentions(p.notes,
                       "MKL_NUM_THREADS, OPENBLAS_NUM_THREADS not set by the user: "
                       "set to 24 (the rank's cores)"));
}

TEST(BindingPlan, BindToNoneStillSetsFloorCoresOverRanksThreads) {
  BindingOptions o;
  o.bind_to = BindTo::kNone;
  auto p = plan(synthetic("numa:4 core:24 pu:1"), 8, o);
  for (const auto& r : p.ranks) {
    EXPECT_FALSE(r.bound);
    EXPECT_EQ(r.threads, 12);  // floor(N / M), the seed's torch.set_num_threads rule
  }
  EXPECT_TRUE(p.warnings.empty());
}

TEST(BindingPlan, HwthreadBindingCountsHardwareThreads) {
  BindingOptions o;
  o.bind_to = BindTo::kHwthread;
  auto p = plan(x86(), 4, o);
  EXPECT_EQ(p.ranks[0].cpu_list, "0-11,48-59");  // 24 hwthreads = 12 cores with siblings
  EXPECT_EQ(p.ranks[0].cores, 12);
  EXPECT_EQ(p.ranks[0].threads, 24);
  EXPECT_TRUE(p.ranks[0].strict);
  auto p3 = plan(x86(), 96, o);
  EXPECT_EQ(p3.ranks[1].cpu_list, "48");  // core 0's second thread
}

TEST(BindingPlan, NumaBindingGivesTheWholeNodeAndSharesItsCores) {
  BindingOptions o;
  o.bind_to = BindTo::kNuma;
  auto t = synthetic("numa:4 core:24 pu:1");
  auto p = plan(t, 8, o);
  EXPECT_EQ(p.ranks[0].cpu_list, "0-23");
  EXPECT_EQ(p.ranks[1].cpu_list, "0-23");
  EXPECT_EQ(p.ranks[2].cpu_list, "24-47");
  EXPECT_EQ(p.ranks[0].threads, 12);
  auto p3 = plan(t, 3, o);  // one node per rank, the fourth idle
  EXPECT_EQ(p3.ranks[2].cpu_list, "48-71");
  EXPECT_EQ(p3.ranks[2].threads, 24);
}

TEST(BindingPlan, SocketBindingUsesPackages) {
  BindingOptions o;
  o.bind_to = BindTo::kSocket;
  auto p = plan(synthetic("pack:2 core:24 pu:2"), 4, o);  // one NUMA node, two packages
  EXPECT_EQ(p.ranks[0].cpu_list, "0-47");
  EXPECT_EQ(p.ranks[3].cpu_list, "48-95");
  EXPECT_EQ(p.ranks[3].threads, 12);
}

TEST(BindingPlan, MapByNumaRoundRobinsRanksOverNodes) {
  BindingOptions o;
  o.map_by = MapBy::kNuma;
  auto p = plan(synthetic("numa:4 core:24 pu:1"), 8, o);
  EXPECT_EQ(p.ranks[0].cpu_list, "0-11");
  EXPECT_EQ(p.ranks[1].cpu_list, "24-35");
  EXPECT_EQ(p.ranks[3].cpu_list, "72-83");
  EXPECT_EQ(p.ranks[4].cpu_list, "12-23");
}

TEST(BindingPlan, MapBySlotFillsInCoreOrder) {
  BindingOptions o;
  o.map_by = MapBy::kSlot;
  auto p = plan(synthetic("numa:4 core:24 pu:1"), 14, o);
  EXPECT_EQ(p.ranks[12].cpu_list, "72-77");
  auto d = plan(synthetic("numa:4 core:24 pu:1"), 14);
  EXPECT_EQ(d.ranks[12].cpu_list, "78-83");  // default: 4,4,3,3 per node
}

TEST(BindingPlan, CpusPerRankAndPeSetTheBlockSize) {
  BindingOptions o;
  o.cpus_per_rank = 4;
  auto p = plan(synthetic("numa:4 core:24 pu:1"), 4, o);
  EXPECT_EQ(p.ranks[0].cpu_list, "0-3");
  EXPECT_EQ(p.ranks[1].cpu_list, "24-27");  // still spread over NUMA nodes
  EXPECT_TRUE(has_env(p.ranks[1], "OMP_NUM_THREADS=4"));
  EXPECT_TRUE(p.ranks[1].strict);
  BindingOptions pe;
  pe.map_by = MapBy::kSlot;
  pe.pe = 2;
  auto q = plan(synthetic("numa:4 core:24 pu:1"), 4, pe);
  EXPECT_EQ(q.ranks[3].cpu_list, "6-7");
}

TEST(BindingPlan, ImpossibleRequestsAreErrors) {
  BindingOptions big;
  big.cpus_per_rank = 8;
  EXPECT_NE(error_of(container_slice(), 2, big).find("needs 16 cores; this host allows 6"),
            std::string::npos)
      << error_of(container_slice(), 2, big);
  BindingOptions clash;
  clash.pe = 2;
  clash.cpus_per_rank = 4;
  EXPECT_NE(error_of(x86(), 2, clash).find("disagree"), std::string::npos);
  BindingOptions over;
  over.cpus_per_rank = 1;
  EXPECT_FALSE(error_of(container_slice(), 7, over).empty());
}

TEST(BindingPlan, MemoryBindingMasksTheRanksNodes) {
  BindingOptions o;
  o.bind_mem = true;
  auto p = plan(synthetic("numa:8 core:24 pu:1"), 4, o);
  EXPECT_TRUE(p.ranks[3].bind_mem);
  EXPECT_EQ(p.ranks[3].numa_list, "6-7");
  EXPECT_EQ(p.ranks[3].nodemask[0], (1UL << 6) | (1UL << 7));
  disable_memory_binding(p, "set_mempolicy: Operation not permitted");
  EXPECT_FALSE(p.ranks[3].bind_mem);
  EXPECT_TRUE(mentions(p.warnings, "memory binding disabled: set_mempolicy"));
  auto over = plan(container_slice(), 7, o);  // unbound ranks never bind memory
  EXPECT_FALSE(over.ranks[0].bind_mem);
}

TEST(BindingPlan, OnlyExplicitRequestsMakeBindingFailuresFatal) {
  BindingOptions by_node;
  by_node.map_by = MapBy::kNode;  // a cross-host choice: same cores as the default
  auto p = plan(x86(), 2, by_node);
  EXPECT_FALSE(p.ranks[0].strict);
  EXPECT_EQ(p.ranks[1].cpu_list, "24-47,72-95");
  BindingOptions core;
  core.bind_to = BindTo::kCore;
  EXPECT_TRUE(plan(x86(), 2, core).ranks[0].strict);
}

TEST(BindingPlan, NoRanksIsAnEmptyPlan) {
  auto p = plan(x86(), 0);
  EXPECT_TRUE(p.ranks.empty());
}

}  // namespace
}  // namespace ferry
