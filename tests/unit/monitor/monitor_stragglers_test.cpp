#include <gtest/gtest.h>

#include "ferry/monitor/stragglers.hpp"

namespace ferry {
namespace {

using namespace std::chrono_literals;
using Clock = StragglerWatch::Clock;

RankTick tick(int rank, uint32_t cpu, uint64_t out = 0, char state = 'R') {
  return {rank, "rank " + std::to_string(rank) + " on node" + std::to_string(rank % 2), state, cpu,
          out};
}

// Feeds `seconds` rounds one second apart; `make(rank, second)` gives each rank's tick.
template <class F>
std::vector<Straggler> run(StragglerWatch& w, Clock::time_point& t, int ranks, int seconds,
                           F make) {
  std::vector<Straggler> named;
  for (int s = 0; s < seconds; ++s) {
    std::vector<RankTick> round;
    round.reserve(static_cast<size_t>(ranks));
    for (int r = 0; r < ranks; ++r) round.push_back(make(r, s));
    for (auto& x : w.observe(t, round)) named.push_back(x);
    t += 1s;
  }
  return named;
}

TEST(MonitorStragglers, ABalancedJobFlagsNobody) {
  StragglerWatch w({10s, 0.25, 200});
  auto t = Clock::now();
  auto named = run(w, t, 8, 40, [](int r, int s) {
    return tick(r, 900 + static_cast<uint32_t>((r * 37 + s * 11) % 100), uint64_t(s) * 100);
  });
  EXPECT_TRUE(named.empty());
}

TEST(MonitorStragglers, ALowCpuRankIsNamedOnceAfterTheWindow) {
  StragglerWatch w({10s, 0.25, 200});
  auto t = Clock::now();
  auto low = [](int r, int) { return tick(r, r == 3 ? 30 : 970); };
  // Not before a whole window was watched.
  EXPECT_TRUE(run(w, t, 4, 10, low).empty());
  auto named = run(w, t, 4, 20, low);
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0].rank, 3);
  EXPECT_EQ(named[0].why,
            "rank 3 on node1 has used 3% CPU for 10 s while the median rank used 97%");
  EXPECT_TRUE(w.lagging(3));
  // It recovers, then lags again: named again.
  run(w, t, 4, 15, [](int r, int) { return tick(r, 950); });
  EXPECT_FALSE(w.lagging(3));
  EXPECT_EQ(run(w, t, 4, 15, low).size(), 1u);
}

TEST(MonitorStragglers, IdlePeersAreNoMeasure) {
  // Everyone waits (an I/O-bound job): a quieter rank is not a straggler by CPU.
  StragglerWatch w({5s, 0.25, 200});
  auto t = Clock::now();
  EXPECT_TRUE(run(w, t, 4, 20, [](int r, int) { return tick(r, r == 0 ? 1 : 100); }).empty());
}

TEST(MonitorStragglers, StoppedAndDiskSleepRanksAreNamed) {
  StragglerWatch w({5s, 0.25, 200});
  auto t = Clock::now();
  auto named = run(w, t, 3, 10, [](int r, int) { return tick(r, 0, 0, r == 1 ? 'T' : 'D'); });
  ASSERT_EQ(named.size(), 3u);
  EXPECT_EQ(named[0].why, "rank 0 on node0 has been in disk sleep (D state) for 5 s");
  EXPECT_EQ(named[1].why, "rank 1 on node1 has been stopped (SIGSTOP or a debugger) for 5 s");
  // A rank in D for part of the window only is not stuck.
  StragglerWatch v({5s, 0.25, 200});
  auto u = Clock::now();
  EXPECT_TRUE(run(v, u, 2, 12, [](int r, int s) {
                return tick(r, 900, 0, r == 0 && s % 3 == 0 ? 'D' : 'R');
              }).empty());
}

TEST(MonitorStragglers, ASilentRankAmongPrintingPeers) {
  StragglerWatch w({10s, 0.25, 200});
  auto t = Clock::now();
  auto named =
      run(w, t, 4, 15, [](int r, int s) { return tick(r, 50, r == 2 ? 10 : uint64_t(s) * 2000); });
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0].why,
            "rank 2 on node0 printed 0 B/s for 10 s while the median rank printed 2.0 KB/s");
}

TEST(MonitorStragglers, StoppedRanksDoNotPullTheMedianDown) {
  // Ranks 0 and 2 compute at 35% of a core each (a loaded machine), rank 1 sleeps, rank 3 is
  // stopped. With the stopped rank in the measure the median would be 17.5%, below the busy
  // mark, and rank 1 would be named only for its silence; among the running ranks it is 35%.
  StragglerWatch w({5s, 0.25, 200});
  auto t = Clock::now();
  auto named = run(w, t, 4, 10, [](int r, int s) {
    if (r == 3) return tick(r, 0, 0, 'T');
    if (r == 1) return tick(r, 0, 0, 'S');
    return tick(r, 350, uint64_t(s) * 30);
  });
  ASSERT_EQ(named.size(), 2u);
  EXPECT_EQ(named[0].why, "rank 1 on node1 has used 0% CPU for 5 s while the median rank used 35%");
  EXPECT_EQ(named[1].why, "rank 3 on node1 has been stopped (SIGSTOP or a debugger) for 5 s");
  // One running rank left has no peers to lag behind.
  StragglerWatch v({5s, 0.25, 200});
  auto u = Clock::now();
  EXPECT_TRUE(run(v, u, 2, 10, [](int r, int) {
                return r == 0 ? tick(r, 0, 0, 'T') : tick(r, 10);
              }).size() == 1u);
}

TEST(MonitorStragglers, EndedRanksAreForgotten) {
  StragglerWatch w({3s, 0.25, 200});
  auto t = Clock::now();
  run(w, t, 2, 10, [](int r, int) { return tick(r, r == 1 ? 10 : 990); });
  EXPECT_TRUE(w.lagging(1));
  run(w, t, 1, 1, [](int r, int) { return tick(r, 990); });
  EXPECT_FALSE(w.lagging(1));
  EXPECT_EQ(cpu_percent(1500), "150%");
  EXPECT_EQ(byte_rate(4.1e6), "4.1 MB/s");
}

}  // namespace
}  // namespace ferry
