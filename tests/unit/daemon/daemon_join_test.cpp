// Ranks that join or leave a job while it runs on a host (StartRanks, StopRanks: elastic
// Horovod's new and removed slots), the test playing ferryrun and a fake spawner the ranks.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "daemon_front_end.hpp"
#include "fake_spawner.hpp"
#include "ferry/daemon/sweeper.hpp"

namespace ferry {
namespace {

using std::chrono::milliseconds;
using test_support::FakeSpawner;
using test_support::FrontEnd;

class DaemonJoin : public ::testing::Test {
 protected:
  void SetUp() override { ::signal(SIGPIPE, SIG_IGN); }

  // Ranks 0..n-1 on this host, with PMI on, as ferryrun sends them.
  static wire::HostSpec spec(int n, const std::string& job) {
    wire::HostSpec s;
    s.job_id = job;
    s.argv = {"/fake/rank"};
    s.env = {"JOB_VAR=1"};
    s.world_size = n;
    s.pmi = true;
    s.binding.bind_to = BindTo::kNone;
    for (int r = 0; r < n; ++r) s.ranks.push_back({r, {"OWN=" + std::to_string(r)}, {}});
    return s;
  }

  static bool has(const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  }
  static std::string value_of(const std::vector<std::string>& env, const std::string& name) {
    for (const auto& e : env)
      if (e.starts_with(name + "=")) return e.substr(name.size() + 1);
    return "";
  }

  FakeSpawner ranks;
};

TEST_F(DaemonJoin, StartedRanksJoinTheRunningJobAndHoldItsEnd) {
  FrontEnd fe(&ranks);
  fe.send(spec(2, "join"));
  ASSERT_TRUE(fe.run_until([&] { return fe.all<wire::Started>().size() == 2; }));
  wire::StartRanks more;
  more.ranks.push_back({5, {"HOROVOD_RANK=2", "OWN=5"}, {"--local-rank=2"}});
  fe.send(more);
  ASSERT_TRUE(fe.run_until([&] { return fe.all<wire::Started>().size() == 3; }));

  EXPECT_EQ(5, fe.all<wire::Started>()[2].rank);
  ASSERT_EQ(3u, ranks.children().size());
  const auto& joined = *ranks.children()[2];
  EXPECT_EQ((std::vector<std::string>{"/fake/rank", "--local-rank=2"}), joined.argv);
  EXPECT_TRUE(has(joined.env, "HOROVOD_RANK=2"));
  EXPECT_TRUE(has(joined.env, "OWN=5")) << "its own variables win over the job's";
  EXPECT_TRUE(has(joined.env, "JOB_VAR=1")) << "the job's environment, as the spec's ranks";
  EXPECT_EQ(value_of(ranks.children()[0]->env, kJobTagVar), value_of(joined.env, kJobTagVar))
      << "the job's tag, so the sweep finds what it leaves";
  EXPECT_FALSE(value_of(ranks.children()[0]->env, "PMI_FD").empty());
  EXPECT_EQ("", value_of(joined.env, "PMI_FD")) << "PMI's world is the spec's";

  ASSERT_EQ(7, ::write(joined.out.get(), "joined\n", 7));
  ranks.exit(*ranks.children()[0], 0);
  ranks.exit(*ranks.children()[1], 0);
  ASSERT_TRUE(fe.run_until([&] { return fe.all<wire::Exited>().size() == 2; }));
  fe.run_for(milliseconds(100));
  EXPECT_FALSE(fe.first<wire::Done>()) << "Done while a joined rank still runs";
  ranks.exit(*ranks.children()[2], 4);
  ASSERT_TRUE(fe.run_until([&] { return fe.stopped(); }));
  auto exits = fe.all<wire::Exited>();
  ASSERT_EQ(3u, exits.size());
  EXPECT_EQ(5, exits[2].rank);
  EXPECT_EQ(4, exits[2].exit_code);
  EXPECT_EQ("joined\n", fe.output(5, StreamId::kStdout, fe.index_of<wire::Exited>()));
  EXPECT_EQ(fe.frames().size() - 1, fe.index_of<wire::Done>()) << "Done comes last";
  EXPECT_EQ(0, fe.exit_code());
}

TEST_F(DaemonJoin, StoppedRanksEndAfterTheirGraceWhileTheOthersGoOn) {
  ranks.ignore_sigterm = true;
  FrontEnd fe(&ranks);
  fe.send(spec(3, "stop"));
  ASSERT_TRUE(fe.run_until([&] { return fe.all<wire::Started>().size() == 3; }));
  const pid_t victim = ranks.children()[1]->pid;
  fe.send(wire::StopRanks{{1, 42}, 300});  // 42 is not here: skipped
  ASSERT_TRUE(fe.run_until([&] { return fe.all<wire::Exited>().size() == 1; }));

  auto exits = fe.all<wire::Exited>();
  EXPECT_EQ(1, exits[0].rank);
  EXPECT_EQ(SIGKILL, exits[0].signal) << "it ignored SIGTERM: killed after the grace";
  const auto& sent = ranks.signals();
  ASSERT_EQ(2u, sent.size()) << "only the stopped rank is signalled";
  EXPECT_EQ(victim, sent[0].pgid);
  EXPECT_EQ(SIGTERM, sent[0].signo);
  EXPECT_EQ(victim, sent[1].pgid);
  EXPECT_EQ(SIGKILL, sent[1].signo);
  const auto grace = std::chrono::duration_cast<milliseconds>(sent[1].at - sent[0].at).count();
  EXPECT_GE(grace, 290);
  EXPECT_LE(grace, 2000);
  fe.run_for(milliseconds(100));
  EXPECT_FALSE(fe.first<wire::Done>()) << "the other ranks still run";
  EXPECT_TRUE(fe.all<wire::Failure>().empty());

  ranks.exit(*ranks.children()[0], 0);
  ranks.exit(*ranks.children()[2], 0);
  ASSERT_TRUE(fe.run_until([&] { return fe.stopped(); }));
  EXPECT_EQ(3u, fe.all<wire::Exited>().size());
  EXPECT_TRUE(fe.first<wire::Done>());
  EXPECT_EQ(0, fe.exit_code());
}

TEST_F(DaemonJoin, ARankStoppedBeforeItsTurnNeverStarts) {
  FrontEnd fe(&ranks);
  fe.send(spec(1, "stop-pending"));
  ASSERT_TRUE(fe.run_until([&] { return fe.all<wire::Started>().size() == 1; }));
  wire::StartRanks more;
  more.ranks.push_back({1, {}, {}});
  more.ranks.push_back({2, {}, {}});
  fe.send(more);
  fe.send(wire::StopRanks{{2}, 0});  // read with the StartRanks, before rank 2's turn
  ASSERT_TRUE(fe.run_until([&] { return fe.all<wire::Exited>().size() == 1; }));

  auto exits = fe.all<wire::Exited>();
  EXPECT_EQ(2, exits[0].rank);
  EXPECT_EQ(SIGKILL, exits[0].signal);
  fe.run_for(milliseconds(50));
  ASSERT_EQ(2u, ranks.children().size()) << "rank 2 was started after it was stopped";
  auto started = fe.all<wire::Started>();
  ASSERT_EQ(2u, started.size());
  EXPECT_EQ(1, started[1].rank);
  for (const auto& c : ranks.children()) ranks.exit(*c, 0);
  ASSERT_TRUE(fe.run_until([&] { return fe.stopped(); }));
  EXPECT_EQ(3u, fe.all<wire::Exited>().size());
}

TEST_F(DaemonJoin, RanksToStartBeforeTheSpecOrTwiceAreRefused) {
  FrontEnd early(&ranks);
  wire::StartRanks more;
  more.ranks.push_back({0, {}, {}});
  early.send(more);
  ASSERT_TRUE(early.run_until([&] { return early.stopped(); }));
  ASSERT_EQ(1u, early.all<wire::Failure>().size());
  EXPECT_EQ("ranks to start arrived before the host spec", early.all<wire::Failure>()[0].message);
  EXPECT_TRUE(ranks.children().empty());

  FakeSpawner others;
  FrontEnd twice(&others);
  twice.send(spec(1, "twice"));
  twice.send(more);
  ASSERT_TRUE(twice.run_until([&] { return !twice.all<wire::Failure>().empty(); }));
  EXPECT_EQ("rank 0 to start is already on this host", twice.all<wire::Failure>()[0].message);
}

}  // namespace
}  // namespace ferry
