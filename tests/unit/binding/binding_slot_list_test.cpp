// Rank-file slot lists: the forms Open MPI's rank files use, resolved to logical cores, and
// a rank file's ranks bound to exactly those cores.
#include <gtest/gtest.h>

#include "ferry/binding/id_list.hpp"
#include "ferry/binding/plan.hpp"
#include "ferry/binding/slot_list.hpp"

namespace ferry {
namespace {

const std::string kX86Xml = std::string(FERRY_TEST_DATA) + "/binding/x86-2socket-24core-ht.xml";

// The cores `text` names on a host of `sockets`, as "0-3,7", or the error.
std::string cores(const std::string& text, const std::vector<int>& sockets) {
  auto c = slot_list_cores(text, sockets);
  return c ? format_id_list(*c) : "error: " + c.error().message;
}

TEST(SlotList, NamesHostWideCoresSocketCoresAndWholeSockets) {
  const std::vector<int> two_by_four{4, 4};
  EXPECT_EQ(cores("1-2", two_by_four), "1-2");
  EXPECT_EQ(cores("5", two_by_four), "5");
  EXPECT_EQ(cores("1:0-2", two_by_four), "4-6");
  EXPECT_EQ(cores("0:0,1", two_by_four), "0-1");  // ',' goes on with socket 0
  EXPECT_EQ(cores("0:0-1,1:0-1", two_by_four), "0-1,4-5");
  EXPECT_EQ(cores("0:3;1", two_by_four), "1,3");  // ';' starts again host-wide
  EXPECT_EQ(cores("1:*", two_by_four), "4-7");
  EXPECT_EQ(cores("2,2,1-2", two_by_four), "1-2");
}

TEST(SlotList, SyntaxErrorsQuoteTheList) {
  for (const char* bad : {"", "x", "1:", ":1", "1-", "3-1", "0:1-a", "*", "-1", "1,,2", "+1"}) {
    auto items = parse_slot_list(bad);
    ASSERT_FALSE(items.ok()) << bad;
    EXPECT_EQ(items.error().message, std::string("bad slot list '") + bad + "'");
  }
}

TEST(SlotList, CoresAndSocketsAHostLacksAreNamedWithWhatItHas) {
  const std::vector<int> sockets{4, 2};
  EXPECT_EQ(cores("6", sockets), "error: core 6 does not exist (the host has 6: 0-5)");
  EXPECT_EQ(cores("1:2", sockets), "error: core 2 of socket 1 does not exist (it has 2: 0-1)");
  EXPECT_EQ(cores("2:0", sockets), "error: socket 2 does not exist (the host has 2: 0-1)");
  EXPECT_EQ(cores("0:0", {1}), "0");
  EXPECT_EQ(cores("0:1", {1}), "error: core 1 of socket 0 does not exist (it has 1: 0)");
}

// A container's slice of a 2-socket host: 4 cores of socket 0 (20-23) and 2 of socket 1
// (24-25), with their hyperthreads (+48). Logical indices count the allowed cores only.
Topology slice() {
  auto t = Topology::load_xml(kX86Xml);
  EXPECT_TRUE(t.ok());
  EXPECT_TRUE(t->restrict_to(*parse_id_list("20-25,68-73")).ok());
  return std::move(t.value());
}

TEST(SlotList, SocketsCountTheAllowedCores) {
  EXPECT_EQ(socket_core_counts(slice()), (std::vector<int>{4, 2}));
  auto t = Topology::load_synthetic("pack:2 core:3 pu:2");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(socket_core_counts(*t), (std::vector<int>{3, 3}));
}

TEST(SlotList, RankFileRanksAreBoundToExactlyTheirCores) {
  BindingOptions opt;
  opt.bind_to = BindTo::kHwthread;  // a rank file names cores, whatever --bind-to says
  opt.rank_slots = {"1:0", "0:3", "4-5", ""};
  auto p = plan_bindings(slice(), {}, opt, 4, env_lookup_from({}));
  ASSERT_TRUE(p.ok()) << p.error().message;
  ASSERT_EQ(p->ranks.size(), 4U);
  EXPECT_EQ(p->ranks[0].cpu_list, "24,72");
  EXPECT_EQ(p->ranks[1].cpu_list, "23,71");
  EXPECT_EQ(p->ranks[2].cpu_list, "24-25,72-73");
  EXPECT_EQ(p->ranks[2].threads, 2);
  EXPECT_EQ(p->ranks[3].cpu_list, "20-25,68-73");  // no slot list: every allowed core
  for (const auto& r : p->ranks) {
    EXPECT_TRUE(r.bound);
    EXPECT_TRUE(r.strict);  // asked for explicitly: failing to bind is fatal
  }
  EXPECT_EQ(p->policy, "rank file: each rank on the cores its slot list names");
}

TEST(SlotList, ARankFileCoreTheHostLacksFailsThePlanNamingTheRank) {
  BindingOptions opt;
  opt.rank_slots = {"0", "1:2"};
  auto p = plan_bindings(slice(), {}, opt, 2, env_lookup_from({}));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().message,
            "local rank 1: slot=1:2: core 2 of socket 1 does not exist (it has 2: 0-1)");
  opt.rank_slots = {"0"};
  p = plan_bindings(slice(), {}, opt, 2, env_lookup_from({}));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().message, "the rank file binds 1 ranks here, not 2");
}

}  // namespace
}  // namespace ferry
