#include "ferry/mpmd/app_placement.hpp"

#include <gtest/gtest.h>

#include "plan/host_lists.hpp"

namespace ferry {
namespace {

using testing_plan::hosts;

AppSpec app(const char* program, int np, std::vector<size_t> on = {}) {
  AppSpec a;
  a.command = {program};
  a.np = np;
  a.hosts = std::move(on);
  a.where = "part";
  return a;
}

// "host:rank/app/local" for every rank, in placement order.
std::vector<std::string> layout(const Placement& p) {
  std::vector<std::string> out;
  for (const auto& h : p.hosts)
    for (const auto& r : h.ranks)
      out.push_back(h.host.name + ":" + std::to_string(r.rank) + "/" + std::to_string(r.app) + "/" +
                    std::to_string(r.local_rank));
  return out;
}

TEST(AppPlacement, PartsTakeTheFreeSlotsInOrderAndNumberAfterEachOther) {
  // mpirun -np 1 ./controller : -np 3 ./worker on a:2,b:2
  auto p =
      place_apps(hosts({{"a", 2}, {"b", 2}}), {app("./controller", 1), app("./worker", 3)}, false);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->world_size, 4);
  EXPECT_EQ(p->app_sizes, (std::vector<int>{1, 3}));
  EXPECT_EQ(layout(*p), (std::vector<std::string>{"a:0/0/0", "a:1/1/1", "b:2/1/0", "b:3/1/1"}));
  EXPECT_EQ(p->hosts[0].ranks[0].local_size, 2);
}

TEST(AppPlacement, APartsOwnHostsKeepItThere) {
  // The second part asks for b only: its ranks come before a's second slot is used by part 3.
  auto p = place_apps(hosts({{"a", 2}, {"b", 2}}),
                      {app("./x", 1), app("./y", 2, {1}), app("./z", 1)}, false);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(layout(*p), (std::vector<std::string>{"a:0/0/0", "a:3/2/1", "b:1/1/0", "b:2/1/1"}));
  EXPECT_EQ(p->app_sizes, (std::vector<int>{1, 2, 1}));
  // Cross coordinates are those of the whole job: local rank 1 exists on both hosts.
  EXPECT_EQ(p->hosts[0].ranks[1].cross_size, 2);
}

TEST(AppPlacement, ByNodeMappingAndAPartWithoutNpTakesWhatIsLeft) {
  PlacementPolicy by_node;
  by_node.mapping = HostMapping::kByNode;
  auto p = place_apps(hosts({{"a", 2}, {"b", 2}}), {app("./x", 2), app("./y", 0)}, false, by_node);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(layout(*p), (std::vector<std::string>{"a:0/0/0", "a:2/1/1", "b:1/0/0", "b:3/1/1"}));
}

TEST(AppPlacement, TooManyRanksNameThePartUnlessOversubscribing) {
  auto full = place_apps(hosts({{"a", 2}}), {app("./x", 2), app("./y", 1)}, false);
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.error().message,
            "part (./y): no free slot is left on its hosts for -np 1; add hosts or slots, or "
            "pass --oversubscribe");
  auto over = place_apps(hosts({{"a", 1}, {"b", 1}}), {app("./x", 2), app("./y", 2)}, true);
  ASSERT_TRUE(over.ok()) << over.error().message;
  EXPECT_TRUE(over->oversubscribed);
  EXPECT_EQ(layout(*over), (std::vector<std::string>{"a:0/0/0", "a:2/1/1", "b:1/0/0", "b:3/1/1"}));
  auto partly = place_apps(hosts({{"a", 2}}), {app("./x", 1), app("./y", 3)}, false);
  ASSERT_FALSE(partly.ok());
  EXPECT_NE(partly.error().message.find("part (./y): -np 3 asks for more ranks than the 1 slot"),
            std::string::npos)
      << partly.error().message;
  auto none_left = place_apps(hosts({{"a", 1}}), {app("./x", 1), app("./y", 0)}, true);
  ASSERT_FALSE(none_left.ok());
  EXPECT_EQ(none_left.error().message,
            "part (./y): no free slot is left on its hosts; give it -np N");
}

TEST(AppPlacement, AppOfRank) {
  const std::vector<int> sizes{1, 3, 2};
  EXPECT_EQ(app_of_rank(sizes, 0), 0);
  EXPECT_EQ(app_of_rank(sizes, 1), 1);
  EXPECT_EQ(app_of_rank(sizes, 3), 1);
  EXPECT_EQ(app_of_rank(sizes, 4), 2);
  EXPECT_EQ(app_of_rank({}, 7), 0);
}

}  // namespace
}  // namespace ferry
