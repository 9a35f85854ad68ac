#include "ferry/plan/placement.hpp"

#include <gtest/gtest.h>

#include "ferry/plan/environment.hpp"
#include "plan/host_lists.hpp"

namespace ferry {
namespace {

using testing_plan::hosts;

struct Coord {
  std::string host;
  int rank, local, cross, cross_size;
};

std::vector<Coord> coords(const Placement& p) {
  std::vector<Coord> v;
  for (const auto& h : p.hosts)
    for (const auto& r : h.ranks)
      v.push_back({h.host.name, r.rank, r.local_rank, r.cross_rank, r.cross_size});
  return v;
}

TEST(Placement, ReferenceExampleFromHorovod) {
  // horovodrun's own example: a:1,b:2, np=3 → (a,r0,l0,c0,cs2) (b,r1,l0,c1,cs2) (b,r2,l1,c0,cs1).
  auto p = place_ranks(hosts({{"a", 1}, {"b", 2}}), 3, false);
  ASSERT_TRUE(p.ok());
  auto c = coords(*p);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].host, "a");
  EXPECT_EQ(c[0].cross, 0);
  EXPECT_EQ(c[0].cross_size, 2);
  EXPECT_EQ(c[1].host, "b");
  EXPECT_EQ(c[1].local, 0);
  EXPECT_EQ(c[1].cross, 1);
  EXPECT_EQ(c[1].cross_size, 2);
  EXPECT_EQ(c[2].local, 1);
  EXPECT_EQ(c[2].cross, 0);
  EXPECT_EQ(c[2].cross_size, 1);
}

TEST(Placement, FillsHostsInOrderAndSkipsHostsWithoutRanks) {
  auto p = place_ranks(hosts({{"a", 2}, {"b", 2}, {"c", 2}}), 3, false);
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(p->hosts.size(), 2u);
  EXPECT_EQ(p->hosts[0].ranks.size(), 2u);
  EXPECT_EQ(p->hosts[1].ranks.size(), 1u);
  EXPECT_EQ(p->hosts[1].ranks[0].local_size, 1);
  EXPECT_EQ(p->hosts[1].node_rank, 1);
  EXPECT_FALSE(p->oversubscribed);
}

// MPI_UNIVERSE_SIZE: the slots of the hosts that run ranks (c runs none: its slots do not
// count), never less than the world (oversubscribed).
TEST(Placement, TheUniverseIsTheSlotsOfTheHostsThatRunRanks) {
  auto p = place_ranks(hosts({{"a", 2}, {"b", 3}, {"c", 4}}), 3, false);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(universe_size(*p), 5);
  auto over = place_ranks(hosts({{"a", 1}, {"b", 1}}), 5, true);
  ASSERT_TRUE(over.ok());
  EXPECT_EQ(universe_size(*over), 5);
}

TEST(Placement, ZeroNpMeansEverySlot) {
  auto p = place_ranks(hosts({{"a", 3}, {"b", 1}}), 0, false);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->world_size, 4);
}

TEST(Placement, MoreRanksThanSlotsIsAnErrorNamingTheFix) {
  auto p = place_ranks(hosts({{"a", 2}}), 3, false);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("--oversubscribe"), std::string::npos);
  EXPECT_NE(p.error().message.find("2 slots"), std::string::npos);
  auto one = place_ranks(hosts({{"a", 1}}), 2, false);
  ASSERT_FALSE(one.ok());
  EXPECT_NE(one.error().message.find("than the 1 slot of the hosts given"), std::string::npos)
      << one.error().message;
}

TEST(Placement, OversubscribeSpreadsExtraRanksEvenlyAndKeepsRanksContiguous) {
  auto p = place_ranks(hosts({{"a", 1}, {"b", 1}}), 5, true);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->oversubscribed);
  ASSERT_EQ(p->hosts.size(), 2u);
  EXPECT_EQ(p->hosts[0].ranks.size(), 3u);
  EXPECT_EQ(p->hosts[1].ranks.size(), 2u);
  EXPECT_EQ(p->hosts[1].ranks[0].rank, 3);
}

TEST(Placement, MaxSlotsIsAHardLimit) {
  auto h = hosts({{"a", 1}, {"b", 1}});
  h[0].max_slots = 1;
  auto p = place_ranks(h, 3, true);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->hosts[0].ranks.size(), 1u);
  EXPECT_EQ(p->hosts[1].ranks.size(), 2u);
  h[1].max_slots = 1;
  EXPECT_FALSE(place_ranks(h, 3, true).ok());
}

TEST(Placement, HostsSharingANameGetDistinctLabels) {
  // Docker bridge mode: two containers behind one address, told apart by port.
  auto h = hosts({{"10.0.0.5", 1}, {"10.0.0.5", 1}, {"b", 1}});
  h[0].port = 2201;
  h[1].port = 2202;
  auto p = place_ranks(h, 3, false);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->hosts[0].label, "10.0.0.5:2201");
  EXPECT_EQ(p->hosts[1].label, "10.0.0.5:2202");
  EXPECT_EQ(p->hosts[2].label, "b");
  auto env = rank_environment(*p, p->hosts[1], p->hosts[1].ranks[0]);
  // The entry without a port (ssh config's) keeps the plain name.
  auto two = hosts({{"n", 1}, {"n", 1}});
  two[1].port = 2303;
  auto q = place_ranks(two, 2, false);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->hosts[0].label, "n");
  EXPECT_EQ(q->hosts[1].label, "n:2303");
  EXPECT_NE(std::find(env.begin(), env.end(), "HOROVOD_HOSTNAME=10.0.0.5:2202"), env.end());
}

// Host of each rank, in rank order: "abab".
std::string hosts_by_rank(const Placement& p) {
  std::string out(p.world_size, '?');
  for (const auto& h : p.hosts)
    for (const auto& r : h.ranks) out[r.rank] = h.host.name[0];
  return out;
}

TEST(Placement, MapByNodeRoundRobinsRanksOverHosts) {
  PlacementPolicy node;
  node.mapping = HostMapping::kByNode;
  auto p = place_ranks(hosts({{"a", 2}, {"b", 2}, {"c", 2}}), 5, false, node);
  ASSERT_TRUE(p.ok());
  // mpirun --map-by node: rank r on host r % nhosts while every host has room.
  EXPECT_EQ(hosts_by_rank(*p), "abcab");
  EXPECT_EQ(p->hosts[0].ranks[1].rank, 3);
  EXPECT_EQ(p->hosts[0].ranks[1].local_rank, 1);
  EXPECT_EQ(p->hosts[0].ranks[1].local_size, 2);
  EXPECT_EQ(p->hosts[2].ranks[0].local_size, 1);
  EXPECT_EQ(p->hosts[2].ranks[0].cross_rank, 2);
  EXPECT_EQ(p->hosts[1].ranks[1].cross_size, 2);
  EXPECT_FALSE(p->oversubscribed);
}

TEST(Placement, MapByNodeSkipsFullHostsAndSpreadsFewRanks) {
  PlacementPolicy node;
  node.mapping = HostMapping::kByNode;
  auto p = place_ranks(hosts({{"a", 3}, {"b", 1}}), 4, false, node);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(hosts_by_rank(*p), "abaa");
  // Fewer ranks than slots: one per host first, where fill-by-slot would use a alone.
  auto q = place_ranks(hosts({{"a", 2}, {"b", 2}}), 2, false, node);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(hosts_by_rank(*q), "ab");
  EXPECT_EQ(hosts_by_rank(*place_ranks(hosts({{"a", 2}, {"b", 2}}), 2, false)), "aa");
  auto over = place_ranks(hosts({{"a", 1}, {"b", 1}}), 3, false, node);
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.error().message.find("--oversubscribe"), std::string::npos);
  auto ok = place_ranks(hosts({{"a", 1}, {"b", 1}}), 3, true, node);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(hosts_by_rank(*ok), "aba");
  EXPECT_TRUE(ok->oversubscribed);
}

TEST(Placement, RankByNodeNumbersSlotFilledHostsRoundRobin) {
  PlacementPolicy p;
  p.order = RankOrder::kByNode;
  auto r = place_ranks(hosts({{"a", 2}, {"b", 2}, {"c", 2}}), 3, false, p);
  ASSERT_TRUE(r.ok());
  // --map-by slot --rank-by node: counts a:2 b:1, numbered across hosts.
  EXPECT_EQ(hosts_by_rank(*r), "aba");
  PlacementPolicy q;
  q.mapping = HostMapping::kByNode;
  q.order = RankOrder::kBySlot;
  auto s = place_ranks(hosts({{"a", 2}, {"b", 2}}), 3, false, q);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(hosts_by_rank(*s), "aab");
}

TEST(Placement, PerHostPutsExactlyNOnEachHost) {
  PlacementPolicy n2;
  n2.per_host = 2;
  auto p = place_ranks(hosts({{"a", 4}, {"b", 4}, {"c", 4}}), 0, false, n2);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->world_size, 6);
  EXPECT_EQ(hosts_by_rank(*p), "aabbcc");
  auto fewer = place_ranks(hosts({{"a", 4}, {"b", 4}, {"c", 4}}), 3, false, n2);
  ASSERT_TRUE(fewer.ok());
  EXPECT_EQ(hosts_by_rank(*fewer), "aab");
  auto too_many = place_ranks(hosts({{"a", 4}, {"b", 4}}), 5, false, n2);
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.error().message.find("-N 2"), std::string::npos);
  auto small = place_ranks(hosts({{"a", 1}, {"b", 4}}), 0, false, n2);
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.error().message.find("--oversubscribe"), std::string::npos);
  EXPECT_TRUE(place_ranks(hosts({{"a", 1}, {"b", 4}}), 0, true, n2).ok());
  auto h = hosts({{"a", 1}});
  h[0].max_slots = 1;
  EXPECT_FALSE(place_ranks(h, 0, true, n2).ok());
}

TEST(Placement, DefaultPolicyIsHorovodFill) {
  auto p = place_ranks(hosts({{"a", 2}, {"b", 2}}), 3, false, PlacementPolicy{});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(hosts_by_rank(*p), "aab");
}

TEST(Placement, NoHostsIsAnError) { EXPECT_FALSE(place_ranks({}, 1, false).ok()); }

bool has(const std::vector<std::string>& env, const std::string& kv) {
  return std::find(env.begin(), env.end(), kv) != env.end();
}

TEST(Environment, RankVariablesForEveryFramework) {
  auto p = place_ranks(hosts({{"a", 1}, {"b", 2}}), 3, false);
  ASSERT_TRUE(p.ok());
  auto env = rank_environment(*p, p->hosts[1], p->hosts[1].ranks[1]);
  for (const char* kv :
       {"RANK=2", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=2", "GROUP_RANK=1", "HOROVOD_RANK=2",
        "HOROVOD_LOCAL_RANK=1", "HOROVOD_LOCAL_SIZE=2", "HOROVOD_CROSS_RANK=0",
        "HOROVOD_CROSS_SIZE=1", "HOROVOD_HOSTNAME=b", "OMPI_COMM_WORLD_RANK=2",
        "OMPI_COMM_WORLD_LOCAL_RANK=1", "OMPI_COMM_WORLD_LOCAL_SIZE=2",
        "OMPI_COMM_WORLD_NODE_RANK=1", "CROSS_RANK=1", "LOCAL_SIZE=2"})
    EXPECT_TRUE(has(env, kv)) << kv;
}

TEST(Environment, JobVariablesAndUserOverridesOfDefaultsOnly) {
  auto p = place_ranks(hosts({{"a", 2}, {"b", 2}}), 4, false);
  ASSERT_TRUE(p.ok());
  JobEnvironment je;
  je.master_addr = "10.0.0.1";
  je.master_port = 12345;
  je.exported = {"FOO=bar"};
  auto env = job_environment(*p, je);
  for (const char* kv : {"MASTER_ADDR=10.0.0.1", "MASTER_PORT=12345", "WORLD_SIZE=4",
                         "GROUP_WORLD_SIZE=2", "HOROVOD_SIZE=4", "OMPI_COMM_WORLD_SIZE=4",
                         "FOO=bar", "PYTHONUNBUFFERED=1", "CROSS_SIZE=2"})
    EXPECT_TRUE(has(env, kv)) << kv;
  je.exported = {"MASTER_PORT=999"};
  env = job_environment(*p, je);
  EXPECT_TRUE(has(env, "MASTER_PORT=999"));
  EXPECT_FALSE(has(env, "MASTER_PORT=12345"));
  // Never the torchelastic agent-store switch (ranks would all act as store clients).
  for (auto& kv : env) EXPECT_EQ(kv.find("TORCHELASTIC_USE_AGENT_STORE"), std::string::npos);
}

const char* fake_lookup(const char* name) {
  return std::string(name) == "HOME" ? "/home/u" : nullptr;
}

TEST(Environment, ResolveExports) {
  std::vector<std::string> warnings;
  auto r = resolve_exports({"A=1", "HOME", "UNSET_THING"}, &fake_lookup, warnings);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (std::vector<std::string>{"A=1", "HOME=/home/u"}));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("UNSET_THING"), std::string::npos);
  auto bad = resolve_exports({"1BAD=x"}, &fake_lookup, warnings);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("1BAD=x"), std::string::npos);
}

}  // namespace
}  // namespace ferry
