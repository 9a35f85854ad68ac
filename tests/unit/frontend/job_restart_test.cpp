// Restarts and shrinking, with the daemons played in-process (fake_daemon.hpp): which attempts
// run, on which hosts, what each attempt's hosts are sent, what the user reads, and the status.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>

#include "fake_daemon.hpp"
#include "ferry/common/environ.hpp"

namespace ferry {
namespace {

using test_support::FakeDaemonLink;
using test_support::FakeScript;
using test_support::run_with_fake_daemons;
using test_support::SentSpec;

JobOptions hosts(int n, int slots_each) {
  JobOptions o;
  for (int i = 1; i <= n; ++i) {
    HostEntry h;
    h.name = "node" + std::to_string(i);
    h.slots = slots_each;
    o.hosts.push_back(h);
  }
  o.command = {"app"};
  o.wdir = "/tmp";
  o.kill_grace_s = 1;
  return o;
}

std::string env_of(const wire::HostSpec& s, const std::string& name) {
  return std::string(env_value(s.env, name).value_or("<unset>"));
}

// The specs of attempt `n`, in arrival order.
std::vector<SentSpec> attempt(const std::vector<SentSpec>& all, uint32_t n) {
  std::vector<SentSpec> out;
  std::copy_if(all.begin(), all.end(), std::back_inserter(out),
               [n](const SentSpec& s) { return s.spec.attempt == n; });
  return out;
}

// Rank `rank` exits with `code` in the attempts below `until`; every other rank runs until told to
// stop, and in later attempts every rank exits 0.
std::function<FakeScript(const HostEntry&)> fails(int rank, int code, uint32_t until) {
  return [=](const HostEntry&) -> FakeScript {
    return [=](FakeDaemonLink& d) {
      if (d.spec().attempt >= until) return d.run_all(0);
      d.start_all();
      for (const auto& r : d.spec().ranks)
        if (r.rank == rank) d.rank_exits(rank, code);
    };
  };
}

TEST(JobRestart, AFailedRankRestartsTheWholeJobOverTheSameConnections) {
  JobOptions o = hosts(2, 2);
  o.max_restarts = 1;
  auto r = run_with_fake_daemons(o, fails(3, 1, 1));
  EXPECT_EQ(r.status, 0) << r.diag;
  ASSERT_EQ(r.specs.size(), 4u) << "two hosts, two attempts, one connection each";
  const auto first = attempt(r.specs, 0), second = attempt(r.specs, 1);
  ASSERT_EQ(second.size(), 2u);
  for (const auto& s : r.specs) {
    EXPECT_TRUE(s.spec.keep_serving);
    EXPECT_TRUE(s.spec.error_files);
    EXPECT_EQ(env_of(s.spec, "TORCHELASTIC_MAX_RESTARTS"), "1");
    EXPECT_EQ(env_of(s.spec, "TORCHELASTIC_USE_AGENT_STORE"), "False");
    EXPECT_EQ(env_of(s.spec, "TORCHELASTIC_RUN_ID"), s.spec.job_id);
    EXPECT_EQ(env_of(s.spec, "NCCL_ASYNC_ERROR_HANDLING"), "1");
    EXPECT_EQ(env_of(s.spec, "TORCH_NCCL_ASYNC_ERROR_HANDLING"), "1");
    EXPECT_EQ(env_of(s.spec, "WORLD_SIZE"), "4");
  }
  EXPECT_EQ(env_of(first[0].spec, "TORCHELASTIC_RESTART_COUNT"), "0");
  EXPECT_EQ(env_of(second[0].spec, "TORCHELASTIC_RESTART_COUNT"), "1");
  // Each attempt's store on a port rank 0's ferryd found free after the last one.
  EXPECT_EQ(env_of(first[0].spec, "MASTER_PORT"), "29511");
  EXPECT_EQ(env_of(second[0].spec, "MASTER_PORT"), "29600");
  EXPECT_NE(r.diag.find("ferryrun: attempt 0: rank 3 on host node2 (local rank 1, pid 1003) "
                        "exited with status 1.\n"
                        "This attempt is over: the other ranks get SIGTERM"),
            std::string::npos)
      << r.diag;
  EXPECT_NE(r.diag.find("ferryrun: restarting (1 of 1) on 2 hosts, 4 ranks\n"), std::string::npos)
      << r.diag;
}

TEST(JobRestart, WithoutRestartsTheFirstFailureEndsTheJobAsBefore) {
  auto r = run_with_fake_daemons(hosts(2, 2), fails(3, 7, 1));
  EXPECT_EQ(r.status, 7);
  ASSERT_EQ(r.specs.size(), 2u);
  EXPECT_FALSE(r.specs[0].spec.keep_serving);
  EXPECT_EQ(env_of(r.specs[0].spec, "TORCHELASTIC_RESTART_COUNT"), "<unset>");
  EXPECT_EQ(env_of(r.specs[0].spec, "NCCL_ASYNC_ERROR_HANDLING"), "<unset>");
  EXPECT_EQ(r.diag.find("restarting"), std::string::npos);
  EXPECT_EQ(r.diag.find("attempt"), std::string::npos);
}

TEST(JobRestart, ARankThatFailsEveryTimeGetsExactlyNPlusOneAttempts) {
  JobOptions o = hosts(2, 1);
  o.max_restarts = 2;
  auto r = run_with_fake_daemons(o, fails(0, 3, 99));
  EXPECT_EQ(r.status, 3);
  EXPECT_EQ(r.specs.size(), 6u);
  EXPECT_EQ(attempt(r.specs, 3).size(), 0u);
  EXPECT_NE(r.diag.find("restarting (1 of 2)"), std::string::npos);
  EXPECT_NE(r.diag.find("restarting (2 of 2)"), std::string::npos);
  EXPECT_NE(r.diag.find("ferryrun: not restarting: no restarts left (--max-restarts 2)\n"),
            std::string::npos)
      << r.diag;
}

TEST(JobRestart, OnceARankFinishedAFailureIsFinal) {
  JobOptions o = hosts(2, 1);
  o.max_restarts = 3;
  auto r = run_with_fake_daemons(o, [](const HostEntry& h) -> FakeScript {
    return [name = h.name](FakeDaemonLink& d) {
      d.start_all();
      if (name == "node1") d.rank_exits(0, 0);
      if (name == "node2") d.rank_exits(1, 9);
      d.done_if_all_ended();
    };
  });
  EXPECT_EQ(r.status, 9);
  EXPECT_EQ(r.specs.size(), 2u);
  EXPECT_NE(r.diag.find("not restarting: a rank had already finished successfully"),
            std::string::npos)
      << r.diag;
}

// node3's connection breaks in attempt 0; with --min-hosts 2 the job goes on with node1 and node2,
// ranks numbered again, and that is not a restart.
TEST(JobRestart, ALostHostLeavesTheJobOnTheOthers) {
  JobOptions o = hosts(3, 2);
  o.min_hosts = 2;
  auto r = run_with_fake_daemons(o, [](const HostEntry& h) -> FakeScript {
    return [name = h.name](FakeDaemonLink& d) {
      if (d.spec().attempt > 0) return d.run_all(0);
      d.start_all();
      if (name == "node3") d.cut("connection reset by peer");
    };
  });
  EXPECT_EQ(r.status, 0) << r.diag;
  const auto second = attempt(r.specs, 1);
  ASSERT_EQ(second.size(), 2u);
  for (const auto& s : second) {
    EXPECT_NE(s.host.name, "node3");
    EXPECT_EQ(env_of(s.spec, "WORLD_SIZE"), "4");
    EXPECT_EQ(env_of(s.spec, "TORCHELASTIC_RESTART_COUNT"), "0") << "not counted";
  }
  std::vector<int> ranks;
  for (const auto& s : second)
    for (const auto& rl : s.spec.ranks) ranks.push_back(rl.rank);
  std::sort(ranks.begin(), ranks.end());
  EXPECT_EQ(ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_NE(r.diag.find("ferryrun: attempt 0: lost host node3 (connection reset by peer)"),
            std::string::npos)
      << r.diag;
  EXPECT_NE(r.diag.find("ferryrun: continuing without node3 on 2 hosts, 4 ranks\n"),
            std::string::npos)
      << r.diag;
}

// Without --min-hosts every host is needed: a restart opens the lost host again, and the job runs
// on all of them once it answers.
TEST(JobRestart, ARestartOpensALostHostAgain) {
  JobOptions o = hosts(2, 1);
  o.max_restarts = 1;
  auto r = run_with_fake_daemons(o, [](const HostEntry& h) -> FakeScript {
    return [name = h.name](FakeDaemonLink& d) {
      if (d.spec().attempt > 0) return d.run_all(0);
      d.start_all();
      if (name == "node2") d.cut("connection reset by peer");
    };
  });
  EXPECT_EQ(r.status, 0) << r.diag;
  const auto second = attempt(r.specs, 1);
  ASSERT_EQ(second.size(), 2u);
  EXPECT_NE(r.diag.find("restarting (1 of 1) on 2 hosts, 2 ranks"), std::string::npos) << r.diag;
}

TEST(JobRestart, TooFewHostsLeftEndsTheJobWithTheLostHostStatus) {
  JobOptions o = hosts(2, 1);
  o.min_hosts = 2;
  auto r = run_with_fake_daemons(o, [](const HostEntry& h) -> FakeScript {
    return [name = h.name](FakeDaemonLink& d) {
      d.start_all();
      if (name == "node2") d.cut("connection reset by peer");
    };
  });
  EXPECT_EQ(r.status, 255);
  EXPECT_EQ(r.specs.size(), 2u);
  EXPECT_NE(r.diag.find("not restarting: no restarts left (--max-restarts 0), and 1 host(s) with "
                        "1 rank(s) are too few to go on"),
            std::string::npos)
      << r.diag;
}

TEST(JobRestart, StdinGoesToTheFirstAttemptOnly) {
  JobOptions o = hosts(1, 1);
  o.max_restarts = 1;
  auto r = run_with_fake_daemons(o, fails(0, 1, 1));
  ASSERT_EQ(r.specs.size(), 2u);
  EXPECT_EQ(r.specs[1].spec.stdin_rank, -1);
}

}  // namespace
}  // namespace ferry
