// Rank files: Open MPI's format read line by line, each rank placed on the host its line
// names, and every bad line refused naming the file and line.
#include "ferry/mpmd/rank_file.hpp"

#include <gtest/gtest.h>

#include "plan/host_lists.hpp"

namespace ferry {
namespace {

using testing_plan::hosts;

RankFile parsed(const std::string& text) {
  auto f = parse_rank_file(text, "ranks.txt");
  EXPECT_TRUE(f.ok()) << f.error().message;
  return f.ok() ? std::move(f.value()) : RankFile{};
}

std::string parse_error(const std::string& text) {
  auto f = parse_rank_file(text, "ranks.txt");
  return f.ok() ? "" : f.error().message;
}

std::string place_error(const std::string& text, const HostList& on, int np,
                        bool oversubscribe = false) {
  auto p = place_by_rank_file(parsed(text), on, np, oversubscribe);
  return p.ok() ? "" : p.error().message;
}

// "host:rank/local" for every rank, in placement order.
std::vector<std::string> layout(const Placement& p) {
  std::vector<std::string> out;
  for (const auto& h : p.hosts)
    for (const auto& r : h.ranks)
      out.push_back(h.host.name + ":" + std::to_string(r.rank) + "/" +
                    std::to_string(r.local_rank));
  return out;
}

TEST(RankFile, ReadsOpenMpisLinesCommentsAndSpacing) {
  RankFile f = parsed(
      "# from the old cluster\n"
      "rank 0=aa slot=1:0-2\n"
      "\n"
      "rank 1 = bb   slot = 0:0,1   # two cores\n"
      "rank 2=+n0 slot=1-2\n"
      "rank 3=cc\n");
  ASSERT_EQ(f.entries.size(), 4U);
  EXPECT_EQ(f.entries[0].host, "aa");
  EXPECT_EQ(f.entries[0].slots, "1:0-2");
  EXPECT_EQ(f.entries[0].line, 2);
  EXPECT_EQ(f.entries[1].rank, 1);
  EXPECT_EQ(f.entries[1].host, "bb");
  EXPECT_EQ(f.entries[1].slots, "0:0,1");
  EXPECT_EQ(f.entries[2].host, "+n0");
  EXPECT_EQ(f.entries[3].slots, "");  // placed, not bound
  EXPECT_EQ(f.where(1), "ranks.txt line 4");
  EXPECT_EQ(f.where(9), "ranks.txt");
}

TEST(RankFile, BadLinesAreRefusedNamingFileAndLine) {
  EXPECT_EQ(parse_error("rank 0=aa slot=0\nrank 1 aa\n"),
            "ranks.txt line 2: expected 'rank N=HOST slot=LIST', got 'rank 1 aa'");
  EXPECT_EQ(parse_error("rank 0=aa slot=0\nrank 0=bb slot=1\n"),
            "ranks.txt line 2: rank 0 was given on line 1 already");
  EXPECT_EQ(parse_error("rank 0=aa slot=0:x\n"), "ranks.txt line 1: bad slot list '0:x'");
  EXPECT_EQ(parse_error("rank -1=aa slot=0\n"),
            "ranks.txt line 1: expected 'rank N=HOST slot=LIST', got 'rank -1=aa slot=0'");
  EXPECT_EQ(parse_error("rank 99999999999=aa\n"),
            "ranks.txt line 1: rank 99999999999 is out of range");
  EXPECT_EQ(parse_error("# nothing\n\n"), "ranks.txt: no 'rank N=HOST slot=LIST' line");
}

TEST(RankFile, RanksGoWhereTheirLinesSayNumberedOnEachHostInRankOrder) {
  auto p = place_by_rank_file(parsed("rank 0=b slot=0\n"
                                     "rank 1=a slot=0\n"
                                     "rank 2=+n1 slot=1\n"
                                     "rank 3=a slot=1\n"),
                              hosts({{"a", 2}, {"b", 2}}), 0, false);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->world_size, 4);
  // Hosts in the job's order; on each, its ranks in rank order.
  EXPECT_EQ(layout(*p), (std::vector<std::string>{"a:1/0", "a:3/1", "b:0/0", "b:2/1"}));
  EXPECT_EQ(p->hosts[1].ranks[0].node_rank, 1);
  EXPECT_EQ(p->hosts[0].ranks[1].local_size, 2);
  EXPECT_FALSE(p->oversubscribed);
}

TEST(RankFile, RanksPastNpAreLeftOutAsUnderMpirun) {
  auto p = place_by_rank_file(parsed("rank 0=a\nrank 1=b\nrank 2=b\n"), hosts({{"a", 1}, {"b", 2}}),
                              2, false);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(layout(*p), (std::vector<std::string>{"a:0/0", "b:1/0"}));
}

TEST(RankFile, WhatCannotBePlacedIsRefusedNamingFileAndLine) {
  const HostList ab = hosts({{"a", 1}, {"b", 1}});
  EXPECT_EQ(place_error("rank 0=a\nrank 2=b\n", ab, 0),
            "ranks.txt: rank 1 is missing (the job has 3 ranks, each needs a line)");
  EXPECT_EQ(place_error("rank 0=a\n", ab, 2),
            "ranks.txt: rank 1 is missing (the job has 2 ranks, each needs a line)");
  EXPECT_EQ(place_error("rank 0=a\nrank 1=zz\n", ab, 0),
            "ranks.txt line 2: host 'zz' is not one of the job's hosts (a, b)");
  EXPECT_EQ(place_error("rank 0=+n2\n", ab, 0),
            "ranks.txt line 1: +n2: the job has 2 host(s), +n0 to +n1");
  EXPECT_EQ(place_error("rank 0=a\nrank 1=a\n", ab, 0),
            "ranks.txt line 2: 2 ranks on a, which has 1 slot(s); pass --oversubscribe");
  EXPECT_EQ(place_error("rank 0=a\nrank 1=a\n", ab, 0, true), "");
  HostList capped = ab;
  capped[0].max_slots = 1;
  EXPECT_EQ(place_error("rank 0=a\nrank 1=a\n", capped, 0, true),
            "ranks.txt line 2: 2 ranks on a, above its max_slots 1");
}

TEST(RankFile, TheFilesHostsAreTheJobsWhenNoneWereGiven) {
  HostList h = rank_file_hosts(parsed("rank 0=b\nrank 1=a\nrank 2=b\nrank 3=+n0\n"));
  ASSERT_EQ(h.size(), 2U);
  EXPECT_EQ(h[0].name, "b");
  EXPECT_EQ(h[0].slots, 3);  // rank 3 is +n0: b
  EXPECT_EQ(h[0].origin, "ranks.txt line 1");
  EXPECT_EQ(h[1].name, "a");
  EXPECT_EQ(h[1].slots, 1);
}

}  // namespace
}  // namespace ferry
