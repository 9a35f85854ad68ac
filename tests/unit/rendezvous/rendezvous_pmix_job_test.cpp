#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ferry/rendezvous/pmix_job.hpp"

namespace ferry {
namespace {

// ---- the namespace a host registers ---------------------------------------------------------

TEST(PmixNamespace, BlockPlacementOnThreeNodes) {
  // ranks 0,1 on a; 2,3 on b; 4 on c. Host b's view.
  auto ns = make_pmix_namespace("ferry.j.0", {0, 0, 1, 1, 2}, {"a", "b", "c"}, 1);
  ASSERT_TRUE(ns) << ns.error().message;
  EXPECT_EQ(ns->nspace, "ferry.j.0");
  EXPECT_EQ(ns->job_size, 5u);
  EXPECT_EQ(ns->local_ranks, (std::vector<int>{2, 3}));
  EXPECT_EQ(ns->local_peers, "2,3");
  EXPECT_EQ(ns->node_map, "a,b,c");
  EXPECT_EQ(ns->proc_map, "0,1;2,3;4");
  ASSERT_EQ(ns->procs.size(), 5u);
  EXPECT_EQ(ns->procs[3], (PmixProc{3, 1, 1}));
  EXPECT_EQ(ns->procs[4], (PmixProc{4, 2, 0}));
}

TEST(PmixNamespace, RoundRobinPlacementKeepsRankOrderPerNode) {
  auto ns = make_pmix_namespace("n", {0, 1, 0, 1}, {"a", "b"}, 0);
  ASSERT_TRUE(ns);
  EXPECT_EQ(ns->local_peers, "0,2");
  EXPECT_EQ(ns->proc_map, "0,2;1,3");
  EXPECT_EQ(ns->procs[2].local_rank, 1);
  EXPECT_EQ(ns->procs[1].local_rank, 0);
}

TEST(PmixNamespace, SameNamesAreToldApart) {
  auto ns = make_pmix_namespace("n", {0, 1, 2}, {"box", "box", "other"}, 1);
  ASSERT_TRUE(ns);
  EXPECT_EQ(ns->node_map, "box,box#2,other");
  EXPECT_EQ(ns->nodes[ns->node], "box#2");
  // A host's name depends only on the hosts before it (ferryrun tells it early: PmixStart).
  EXPECT_EQ(pmix_node_names({"box", "box", "other", "box"}),
            (std::vector<std::string>{"box", "box#2", "other", "box#3"}));
  EXPECT_EQ(pmix_node_names({"box", "box"}).back(), "box#2");
}

TEST(PmixNamespace, RefusesInconsistentInputs) {
  EXPECT_FALSE(make_pmix_namespace("n", {0, 3}, {"a", "b"}, 0));  // rank on no node
  EXPECT_FALSE(make_pmix_namespace("n", {0, 0}, {"a", "b"}, 1));  // nothing here
  EXPECT_FALSE(make_pmix_namespace("n", {0}, {"a"}, 1));          // no such host
}

TEST(PmixNamespace, NameFitsPmix) {
  EXPECT_EQ(pmix_nspace_name("abc", 2), "ferry.abc.2");
  EXPECT_LE(pmix_nspace_name(std::string(400, 'x'), 1).size(), 255u);
}

// ---- fences across hosts --------------------------------------------------------------------

TEST(PmixFences, OneAnswerOnceEveryHostArrivedWithDataInHostOrder) {
  std::vector<std::pair<uint32_t, std::string>> done;
  PmixFences f(3, [&](uint32_t seq, const std::string& d) { done.emplace_back(seq, d); });
  ASSERT_TRUE(f.host_fence(2, 1, "C"));
  ASSERT_TRUE(f.host_fence(0, 1, "A"));
  EXPECT_TRUE(done.empty());
  EXPECT_EQ(f.missing_hosts(), std::vector<int>{1});
  ASSERT_TRUE(f.host_fence(1, 1, "B"));
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0], (std::pair<uint32_t, std::string>{1, "ABC"}));
  EXPECT_TRUE(f.missing_hosts().empty());
  // The next fence, without data (a plain barrier).
  for (int h = 0; h < 3; ++h) ASSERT_TRUE(f.host_fence(h, 2, ""));
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[1], (std::pair<uint32_t, std::string>{2, ""}));
}

TEST(PmixFences, BinaryDataPassesUnchanged) {
  std::string got;
  PmixFences f(2, [&](uint32_t, const std::string& d) { got = d; });
  const std::string a("\0\x01\xff", 3), b("\x00z", 2);
  ASSERT_TRUE(f.host_fence(0, 1, a));
  ASSERT_TRUE(f.host_fence(1, 1, b));
  EXPECT_EQ(got, a + b);
}

TEST(PmixFences, RefusesBrokenReports) {
  PmixFences f(2, [](uint32_t, const std::string&) {});
  EXPECT_FALSE(f.host_fence(2, 1, ""));  // no such host
  EXPECT_FALSE(f.host_fence(0, 2, ""));  // out of order
  ASSERT_TRUE(f.host_fence(0, 1, ""));
  EXPECT_FALSE(f.host_fence(0, 1, ""));  // twice
  EXPECT_FALSE(f.host_fence(-1, 1, ""));
}

// ---- direct modex ---------------------------------------------------------------------------

TEST(PmixModexRouter, RequestGoesToTheRanksHostAndTheReplyBack) {
  PmixModexRouter r({0, 0, 1, 1});
  auto hop = r.request(0, 77, 3);
  ASSERT_TRUE(hop);
  EXPECT_EQ(hop->host, 1);
  auto back = r.reply(1, hop->id);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->host, 0);
  EXPECT_EQ(back->id, 77u);
  EXPECT_FALSE(r.reply(1, hop->id));  // answered already
}

TEST(PmixModexRouter, RefusesUnknownRanksAndForeignAnswers) {
  PmixModexRouter r({0, 1});
  EXPECT_FALSE(r.request(0, 1, 2));
  EXPECT_FALSE(r.request(0, 1, -1));
  auto hop = r.request(0, 5, 1);
  ASSERT_TRUE(hop);
  EXPECT_FALSE(r.reply(0, hop->id));  // host 0 was not asked
  EXPECT_TRUE(r.reply(1, hop->id));
}

TEST(PmixModexRouter, ALostHostFailsTheRequestsWaitingOnIt) {
  PmixModexRouter r({0, 1, 2});
  auto a = r.request(0, 10, 1);
  auto b = r.request(2, 20, 1);
  auto c = r.request(1, 30, 2);
  ASSERT_TRUE(a && b && c);
  auto failed = r.host_lost(1);
  ASSERT_EQ(failed.size(), 2u);  // host 1's own request to host 2 has nobody to answer
  EXPECT_EQ(failed[0].host, 0);
  EXPECT_EQ(failed[0].id, 10u);
  EXPECT_EQ(failed[1].host, 2);
  EXPECT_EQ(failed[1].id, 20u);
  EXPECT_FALSE(r.reply(1, a->id));
  EXPECT_TRUE(r.reply(2, c->id));
}

TEST(PmixNamespace, AnMpmdJobsPartsGiveEachProcItsApp) {
  auto ns = make_pmix_namespace("n", {0, 0, 1, 1, 1}, {"a", "b"}, 1);
  ASSERT_TRUE(ns.ok()) << ns.error().message;
  ASSERT_TRUE(set_pmix_apps(*ns, {1, 3, 1}).ok());
  std::vector<uint32_t> apps;
  for (const auto& p : ns->procs) apps.push_back(p.app);
  EXPECT_EQ(apps, (std::vector<uint32_t>{0, 1, 1, 1, 2}));
  EXPECT_EQ(ns->app_sizes, (std::vector<uint32_t>{1, 3, 1}));
  auto wrong = set_pmix_apps(*ns, {1, 1});
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().message,
            "PMIx: the parts' sizes add up to 2, not the 5 ranks of the job");
  auto one = make_pmix_namespace("n", {0, 1}, {"a", "b"}, 0);
  ASSERT_TRUE(set_pmix_apps(*one, {}).ok());
  EXPECT_TRUE(one->app_sizes.empty());
  EXPECT_EQ(one->procs[1].app, 0u);
}

}  // namespace
}  // namespace ferry

namespace ferry {
namespace {

// ---- the namespace of processes MPI_Comm_spawn started ----------------------------------------

TEST(PmixSpawnedNamespace, ListsOnlyTheHostsThatRunItsProcesses) {
  // Three children on hosts 2, 0, 2 of {a, b, c}; host c's view.
  auto ns = make_spawned_namespace("n.spawn1", {2, 0, 2}, {"a", "b", "c"}, 2);
  ASSERT_TRUE(ns) << ns.error().message;
  EXPECT_EQ(ns->nodes, (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(ns->node_map, "a,c");
  EXPECT_EQ(ns->proc_map, "1;0,2");
  EXPECT_EQ(ns->local_ranks, (std::vector<int>{0, 2}));
  EXPECT_EQ(ns->procs[1].node, 0u);
}

TEST(PmixSpawnedNamespace, AHostWithoutProcessesRegistersItWithNoneLocal) {
  auto ns = make_spawned_namespace("n.spawn1", {2, 0, 2}, {"a", "b", "c"}, 1);
  ASSERT_TRUE(ns) << ns.error().message;
  EXPECT_TRUE(ns->local_ranks.empty());
  EXPECT_EQ(ns->node_map, "a,c");
  EXPECT_EQ(ns->proc_map, "1;0,2");
  EXPECT_EQ(ns->nodes.size(), 2u);
}

TEST(PmixSpawnedNamespace, KeepsTheAttemptsNamesForHostsThatShareOne) {
  // Two hosts called "x": the attempt names them x and x#2; a child on the second is on x#2.
  auto ns = make_spawned_namespace("n.spawn1", {1}, {"x", "x"}, 1);
  ASSERT_TRUE(ns) << ns.error().message;
  EXPECT_EQ(ns->node_map, "x#2");
  EXPECT_FALSE(make_spawned_namespace("n.spawn1", {3}, {"x", "y"}, 0));
}

}  // namespace
}  // namespace ferry
