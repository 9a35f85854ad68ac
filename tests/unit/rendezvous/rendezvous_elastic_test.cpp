#include <gtest/gtest.h>

#include "ferry/rendezvous/elastic_rounds.hpp"

namespace ferry {
namespace {

std::vector<DiscoveredHost> hosts(std::initializer_list<DiscoveredHost> l) { return l; }

TEST(ElasticDiscovery, ParsesHostsAndSlots) {
  auto h = parse_discovered_hosts("a:2\n\n  b \nc:3\na:4\n", 1);
  ASSERT_TRUE(h) << h.error().message;
  EXPECT_EQ(*h, hosts({{"a", 4}, {"b", 1}, {"c", 3}}));
  auto bad = parse_discovered_hosts("a:2\nb:x\n", 1);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "line 2: 'b:x' is not 'host' or 'host:slots'");
  EXPECT_FALSE(parse_discovered_hosts("a:0", 1));
}

TEST(ElasticAssignments, FillHostsInOrderAsHorovodDoes) {
  auto w = elastic_assignments(hosts({{"a", 2}, {"b", 1}, {"c", 2}}), 0);
  ASSERT_EQ(w.size(), 5u);
  EXPECT_EQ(w[0].response(), "0,5,0,2,0,3");
  EXPECT_EQ(w[1].response(), "1,5,1,2,0,2");
  EXPECT_EQ(w[2].response(), "2,5,0,1,1,3");
  EXPECT_EQ(w[3].response(), "3,5,0,2,2,3");
  EXPECT_EQ(w[4].response(), "4,5,1,2,1,2");
  auto capped = elastic_assignments(hosts({{"a", 2}, {"b", 2}}), 3);
  ASSERT_EQ(capped.size(), 3u);
  EXPECT_EQ(capped[2].response(), "2,3,0,1,1,2");
  EXPECT_EQ(ElasticAssignment{}.response(), "-1,-1,-1,-1,-1,-1");
}

TEST(ElasticRounds, AFailedWorkerDropsItsHostAndTheOthersGetNewRanks) {
  ElasticRounds r({.min_np = 2});
  EXPECT_EQ(r.update_hosts(hosts({{"a", 2}, {"b", 2}, {"c", 2}}), 0), kHostsAdded);
  ASSERT_TRUE(r.assign());
  EXPECT_FALSE(r.record({"b", 0}, WorkerState::kFailure));
  for (const auto& s : {ElasticSlot{"a", 0}, {"a", 1}, {"b", 1}, {"c", 0}})
    EXPECT_FALSE(r.record(s, WorkerState::kReady));
  EXPECT_FALSE(r.record({"a", 0}, WorkerState::kReady)) << "counted once";
  EXPECT_TRUE(r.record({"c", 1}, WorkerState::kReady));
  EXPECT_EQ(r.end_round(1), RoundEnd::kResume);
  EXPECT_EQ(r.newly_blacklisted(), std::vector<std::string>{"b"});
  auto w = r.assign();
  ASSERT_TRUE(w) << w.error().message;
  ASSERT_EQ(w->size(), 4u);
  EXPECT_EQ(r.assignment({"c", 1})->response(), "3,4,1,2,1,2");
  EXPECT_FALSE(r.assignment({"b", 1}));
  EXPECT_FALSE(r.record({"b", 1}, WorkerState::kFailure)) << "a blacklisted host is not counted";
  EXPECT_EQ(r.resets(), 1);
}

TEST(ElasticRounds, StopsOnSuccessAllFailedAndTheResetLimit) {
  ElasticRounds ok({.min_np = 1});
  ok.update_hosts(hosts({{"a", 1}, {"b", 1}}), 0);
  ASSERT_TRUE(ok.assign());
  ok.record({"a", 0}, WorkerState::kSuccess);
  EXPECT_TRUE(ok.record({"b", 0}, WorkerState::kReady));
  EXPECT_EQ(ok.end_round(0), RoundEnd::kSucceeded);

  ElasticRounds failed({.min_np = 1});
  failed.update_hosts(hosts({{"a", 1}, {"b", 1}}), 0);
  ASSERT_TRUE(failed.assign());
  failed.record({"a", 0}, WorkerState::kReady);
  EXPECT_TRUE(failed.record({"b", 0}, WorkerState::kFailure));
  // A worker that was READY and then died is a failure.
  failed.record({"a", 0}, WorkerState::kFailure);
  EXPECT_EQ(failed.end_round(0), RoundEnd::kAllFailed);

  ElasticRounds limited({.min_np = 1, .reset_limit = 0});
  limited.update_hosts(hosts({{"a", 1}, {"b", 1}}), 0);
  ASSERT_TRUE(limited.assign());
  limited.record({"a", 0}, WorkerState::kReady);
  limited.record({"b", 0}, WorkerState::kFailure);
  EXPECT_EQ(limited.end_round(0), RoundEnd::kResetLimit);
}

TEST(ElasticRounds, TooFewSlotsAndNewHostsGoLast) {
  ElasticRounds r({.min_np = 3});
  r.update_hosts(hosts({{"b", 2}}), 0);
  EXPECT_FALSE(r.assign());
  EXPECT_EQ(r.update_hosts(hosts({{"a", 1}, {"b", 2}}), 1), kHostsAdded);
  ASSERT_TRUE(r.assign());
  EXPECT_EQ(r.world()[0].host, "b") << "the older host keeps rank 0";
  EXPECT_EQ(r.update_hosts(hosts({{"a", 1}, {"b", 1}}), 2), kHostsRemoved);
  EXPECT_EQ(r.update_hosts(hosts({{"a", 1}, {"b", 1}}), 3), kNoUpdate);
}

// Hosts a and b, a slot each; b's worker fails in the first round, which ends at 100 s.
void fail_b_at_100(ElasticRounds& r) {
  r.update_hosts(hosts({{"a", 1}, {"b", 1}}), 0);
  ASSERT_TRUE(r.assign());
  r.record({"a", 0}, WorkerState::kReady);
  r.record({"b", 0}, WorkerState::kFailure);
  EXPECT_EQ(r.end_round(100), RoundEnd::kResume);
}

TEST(ElasticRounds, ABlacklistedHostComesBackAfterItsCooldown) {
  ElasticRounds r({.min_np = 1, .cooldown_low_s = 10, .cooldown_high_s = 30});
  fail_b_at_100(r);
  EXPECT_TRUE(r.blacklisted("b"));
  EXPECT_EQ(r.update_hosts(hosts({{"a", 1}, {"b", 1}}), 105), kNoUpdate);
  EXPECT_EQ(r.update_hosts(hosts({{"a", 1}, {"b", 1}}), 131), kHostsAdded);
  EXPECT_FALSE(r.blacklisted("b"));
}

// The job opens a host back from its cooldown before any round counts it: meanwhile the listing
// it gives the rounds leaves the host out, which must neither take it back nor forget its
// cooldown; the listing that has it again does.
TEST(ElasticRounds, AHostWhoseCooldownIsOverStaysOutUntilAListingHasIt) {
  ElasticRounds r({.min_np = 1, .cooldown_low_s = 10, .cooldown_high_s = 30});
  fail_b_at_100(r);
  ASSERT_TRUE(r.assign());
  EXPECT_FALSE(r.cooldown_over("b", 105));
  EXPECT_TRUE(r.cooldown_over("b", 131));
  EXPECT_FALSE(r.cooldown_over("a", 131)) << "never blacklisted";
  r.update_hosts(hosts({{"a", 1}}), 131);  // b is being opened again
  EXPECT_FALSE(r.would_reassign());
  EXPECT_TRUE(r.blacklisted("b"));
  EXPECT_TRUE(r.cooldown_over("b", 132));
  EXPECT_EQ(r.update_hosts(hosts({{"a", 1}, {"b", 1}}), 133), kHostsAdded);
  EXPECT_FALSE(r.blacklisted("b"));
  EXPECT_FALSE(r.cooldown_over("b", 133));
  EXPECT_TRUE(r.would_reassign());
}

// horovod's cooldown: LOW * 2^k plus up to LOW of jitter, within [LOW, HIGH]; a host that fails
// again while still cooling down keeps its end; without a range it never comes back.
TEST(ElasticRounds, CooldownGrowsAndIsCappedAndIsForGoodWithoutARange) {
  auto fail_b = [](ElasticRounds& r, double now) {
    EXPECT_TRUE(r.assign());
    r.record({"a", 0}, WorkerState::kReady);
    r.record({"b", 0}, WorkerState::kFailure);
    return r.end_round(now);
  };
  ElasticRounds capped({.min_np = 1, .cooldown_low_s = 2, .cooldown_high_s = 3});
  capped.update_hosts(hosts({{"a", 1}, {"b", 1}}), 0);
  EXPECT_EQ(fail_b(capped, 10), RoundEnd::kResume);
  EXPECT_EQ(capped.update_hosts(hosts({{"a", 1}, {"b", 1}}), 12.9), kNoUpdate);
  EXPECT_EQ(capped.update_hosts(hosts({{"a", 1}, {"b", 1}}), 13), kHostsAdded) << "3 s: HIGH";

  ElasticRounds grows({.min_np = 1, .cooldown_low_s = 10, .cooldown_high_s = 3600});
  grows.update_hosts(hosts({{"a", 1}, {"b", 1}}), 0);
  EXPECT_EQ(fail_b(grows, 0), RoundEnd::kResume);  // first: 20..30 s
  EXPECT_EQ(grows.update_hosts(hosts({{"a", 1}, {"b", 1}}), 19.9), kNoUpdate);
  EXPECT_EQ(grows.update_hosts(hosts({{"a", 1}, {"b", 1}}), 30), kHostsAdded);
  EXPECT_EQ(fail_b(grows, 100), RoundEnd::kResume);  // second: 40..50 s
  EXPECT_EQ(grows.update_hosts(hosts({{"a", 1}, {"b", 1}}), 139.9), kNoUpdate);
  EXPECT_EQ(grows.update_hosts(hosts({{"a", 1}, {"b", 1}}), 150), kHostsAdded);

  ElasticRounds never({.min_np = 1});
  never.update_hosts(hosts({{"a", 1}, {"b", 1}}), 0);
  EXPECT_EQ(fail_b(never, 0), RoundEnd::kResume);
  EXPECT_EQ(never.update_hosts(hosts({{"a", 1}, {"b", 1}}), 1e9), kNoUpdate);
  EXPECT_TRUE(never.blacklisted("b"));
  EXPECT_EQ(never.available_slots(), 1);
}

// A host back from its cooldown is a new host: it goes last, so rank 0 stays on a host that
// kept the state.
TEST(ElasticRounds, AHostBackFromItsCooldownGoesLast) {
  ElasticRounds r({.min_np = 1, .cooldown_low_s = 1, .cooldown_high_s = 1});
  r.update_hosts(hosts({{"a", 1}, {"b", 1}, {"c", 1}}), 0);
  ASSERT_TRUE(r.assign());
  r.record({"a", 0}, WorkerState::kFailure);
  r.record({"b", 0}, WorkerState::kReady);
  r.record({"c", 0}, WorkerState::kReady);
  EXPECT_EQ(r.end_round(0), RoundEnd::kResume);
  ASSERT_TRUE(r.assign());
  EXPECT_EQ(r.world().front().host, "b");
  EXPECT_EQ(r.update_hosts(hosts({{"a", 1}, {"b", 1}, {"c", 1}}), 2), kHostsAdded);
  EXPECT_TRUE(r.would_reassign());
  ASSERT_TRUE(r.assign());
  ASSERT_EQ(r.world().size(), 3u);
  EXPECT_EQ(r.world()[0].host, "b");
  EXPECT_EQ(r.world()[1].host, "c");
  EXPECT_EQ(r.world()[2].host, "a");
}

}  // namespace
}  // namespace ferry
