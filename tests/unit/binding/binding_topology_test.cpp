#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>

#include "ferry/binding/id_list.hpp"
#include "ferry/binding/summary.hpp"
#include "ferry/binding/topology.hpp"

namespace ferry {
namespace {

const std::string kX86Xml = std::string(FERRY_TEST_DATA) + "/binding/x86-2socket-24core-ht.xml";

std::vector<int> range(int lo, int hi) {  // [lo, hi]
  std::vector<int> v;
  for (int i = lo; i <= hi; ++i) v.push_back(i);
  return v;
}

TEST(BindingTopology, SyntheticX86TwoPackagesWithSmt) {
  auto t = Topology::load_synthetic("pack:2 core:24 pu:2");
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->cores().size(), 48u);
  EXPECT_EQ(t->pus().size(), 96u);
  EXPECT_EQ(t->package_count(), 2);
  EXPECT_EQ(t->numa_nodes(), std::vector<int>{0});  // hwloc inserts one NUMA node
  EXPECT_EQ(t->cores()[0].pus, (std::vector<int>{0, 1}));
  EXPECT_EQ(t->cores()[24].package, 1);
  EXPECT_EQ(t->cores()[23].package, 0);
}

TEST(BindingTopology, SyntheticArm96And192Cores) {
  auto arm96 = Topology::load_synthetic("numa:4 core:24 pu:1");
  ASSERT_TRUE(arm96.ok()) << arm96.error().message;
  ASSERT_EQ(arm96->cores().size(), 96u);
  EXPECT_EQ(arm96->numa_nodes(), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(arm96->cores()[23].numa, 0);
  EXPECT_EQ(arm96->cores()[24].numa, 1);
  EXPECT_EQ(arm96->cores()[95].numa, 3);
  EXPECT_EQ(arm96->cores()[50].pus, std::vector<int>{50});

  auto arm192 = Topology::load_synthetic("numa:8 core:24 pu:1");
  ASSERT_TRUE(arm192.ok()) << arm192.error().message;
  EXPECT_EQ(arm192->cores().size(), 192u);
  EXPECT_EQ(arm192->numa_nodes().size(), 8u);
  EXPECT_EQ(arm192->cores()[191].numa, 7);
}

TEST(BindingTopology, XmlWithLinuxStyleHyperthreadNumbering) {
  auto t = Topology::load_xml(kX86Xml);
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->cores().size(), 48u);
  EXPECT_EQ(t->numa_nodes(), (std::vector<int>{0, 1}));
  EXPECT_EQ(t->cores()[0].pus, (std::vector<int>{0, 48}));
  EXPECT_EQ(t->cores()[30].pus, (std::vector<int>{30, 78}));
  EXPECT_EQ(t->cores()[30].numa, 1);
  EXPECT_EQ(t->cores()[30].package, 1);
}

TEST(BindingTopology, ContainerSliceKeepsOnlyItsCores) {
  // A 6-core Docker --cpuset-cpus=20-25,68-73 slice straddling the two sockets.
  auto t = Topology::load_xml(kX86Xml);
  ASSERT_TRUE(t.ok());
  auto pus = range(20, 25);
  auto smt = range(68, 73);
  pus.insert(pus.end(), smt.begin(), smt.end());
  ASSERT_TRUE(t->restrict_to(pus).ok());
  ASSERT_EQ(t->cores().size(), 6u);
  EXPECT_EQ(t->cores()[0].pus, (std::vector<int>{20, 68}));
  EXPECT_EQ(t->cores()[3].numa, 0);
  EXPECT_EQ(t->cores()[4].numa, 1);
  EXPECT_EQ(t->numa_nodes(), (std::vector<int>{0, 1}));
  EXPECT_EQ(t->pus(), (*parse_id_list("20-25,68-73")));
}

TEST(BindingTopology, RestrictToForeignCpusFailsAndKeepsTopology) {
  auto t = Topology::load_synthetic("numa:4 core:24 pu:1");
  ASSERT_TRUE(t.ok());
  auto s = t->restrict_to({500, 501});
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(t->cores().size(), 96u);
}

TEST(BindingTopology, BadInputsAreErrorsNotCrashes) {
  auto bad = Topology::load_synthetic("frobnicate:3");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("frobnicate"), std::string::npos);
  auto missing = Topology::load_xml("/nonexistent/topology.xml");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("/nonexistent/topology.xml"), std::string::npos);
}

TEST(BindingTopology, MoveTransfersOwnership) {
  auto t = Topology::load_synthetic("core:2 pu:1");
  ASSERT_TRUE(t.ok());
  Topology a = std::move(t.value());
  EXPECT_EQ(a.cores().size(), 2u);
  Topology b = std::move(a);
  EXPECT_EQ(b.cores().size(), 2u);
  EXPECT_EQ(a.handle(), nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state
}

TEST(BindingTopology, SystemTopologyHonoursOurAffinityMask) {
  auto t = Topology::load_system();
  ASSERT_TRUE(t.ok()) << t.error().message;
  cpu_set_t mask;
  ASSERT_EQ(sched_getaffinity(0, sizeof mask, &mask), 0);
  const auto pus = t->pus();
  ASSERT_FALSE(pus.empty());
  for (int pu : pus) EXPECT_TRUE(CPU_ISSET(pu, &mask)) << "cpu " << pu << " not allowed";
  EXPECT_EQ(static_cast<int>(pus.size()), CPU_COUNT(&mask));
}

// ferryd's fork server loads the topology once; each ferryd forked from it takes that one,
// unless the CPUs it may use changed since.
TEST(BindingTopology, APreloadedTopologyIsTakenOnceAndOnlyForTheSameCpus) {
  auto fresh = Topology::load_system();
  ASSERT_TRUE(fresh.ok()) << fresh.error().message;
  Topology::preload_system();
  ASSERT_TRUE(Topology::has_preloaded());
  auto taken = Topology::load_system();
  ASSERT_TRUE(taken.ok()) << taken.error().message;
  EXPECT_FALSE(Topology::has_preloaded()) << "the preloaded topology is taken by one load";
  EXPECT_EQ(taken->pus(), fresh->pus());
  EXPECT_EQ(taken->cores().size(), fresh->cores().size());

  cpu_set_t all;
  ASSERT_EQ(sched_getaffinity(0, sizeof all, &all), 0);
  if (CPU_COUNT(&all) < 2) GTEST_SKIP() << "one CPU: the affinity cannot be narrowed";
  const int first = fresh->pus().front();
  Topology::preload_system();
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  auto narrowed = Topology::load_system();
  ASSERT_EQ(sched_setaffinity(0, sizeof all, &all), 0);
  ASSERT_TRUE(narrowed.ok()) << narrowed.error().message;
  EXPECT_EQ(narrowed->pus(), std::vector<int>{first}) << "loaded afresh for the narrower mask";
  EXPECT_FALSE(Topology::has_preloaded()) << "the stale one is dropped";
}

TEST(BindingSummary, OneLineForTheFrontEnd) {
  auto t = Topology::load_xml(kX86Xml);
  ASSERT_TRUE(t.ok());
  std::vector<Accelerator> gpus(8);
  auto s = summarize(*t, gpus);
  EXPECT_EQ(s.cores, 48);
  EXPECT_EQ(s.hwthreads, 96);
  EXPECT_EQ(s.nvidia_gpus, 8);
  EXPECT_EQ(s.to_string(),
            "2 packages, 2 NUMA nodes, 48 cores, 96 hwthreads (cpus 0-95), 8 NVIDIA GPUs");
  auto arm = Topology::load_synthetic("numa:4 core:24 pu:1");
  ASSERT_TRUE(arm.ok());
  EXPECT_EQ(summarize(*arm, {}).to_string(),
            "1 package, 4 NUMA nodes, 96 cores, 96 hwthreads (cpus 0-95)");
}

}  // namespace
}  // namespace ferry
