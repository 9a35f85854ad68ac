// What follows an attempt, as a table: the job's end, a counted restart, or going on with the hosts
// that are left.
#include "ferry/frontend/restart_policy.hpp"

#include <gtest/gtest.h>

namespace ferry {
namespace {

AttemptEnd rank_failed() {
  AttemptEnd e;
  e.failed = true;
  e.hosts_left = 4;
  e.ranks_left = 8;
  return e;
}

AttemptEnd host_lost(int left, int ranks) {
  AttemptEnd e;
  e.failed = true;
  e.hosts_lost = 4 - left;
  e.hosts_left = left;
  e.ranks_left = ranks;
  return e;
}

TEST(RestartPolicy, Table) {
  struct Case {
    const char* name;
    RestartLimits limits;
    AttemptEnd end;
    NextStep step;
    const char* why;  // substring of Decision::why ("" = empty)
  };
  AttemptEnd ok;
  AttemptEnd interrupted = rank_failed();
  interrupted.interrupted = true;
  AttemptEnd partly = rank_failed();
  partly.rank_succeeded_first = true;
  const std::vector<Case> cases = {
      {"success", {3, 0, 0}, ok, NextStep::kFinish, ""},
      {"no fault tolerance", {0, 0, 0}, rank_failed(), NextStep::kFinish, ""},
      {"a restart left", {1, 0, 0}, rank_failed(), NextStep::kRestart, ""},
      {"the user's signal", {3, 0, 0}, interrupted, NextStep::kFinish, "interrupted"},
      {"a rank finished first", {3, 0, 0}, partly, NextStep::kFinish, "already finished"},
      {"lost host, enough left", {0, 3, 0}, host_lost(3, 6), NextStep::kShrink, ""},
      {"lost hosts, too few left, restarts", {1, 3, 0}, host_lost(2, 4), NextStep::kRestart, ""},
      {"lost hosts, too few left, none",
       {0, 3, 0},
       host_lost(2, 4),
       NextStep::kFinish,
       "2 host(s) with 4 rank(s) are too few"},
      {"lost host, no --min-hosts: a restart", {2, 0, 0}, host_lost(3, 6), NextStep::kRestart, ""},
      {"--min-np floor met", {0, 0, 6}, host_lost(3, 6), NextStep::kShrink, ""},
      {"--min-np floor missed", {0, 0, 7}, host_lost(3, 6), NextStep::kFinish, "too few"},
      {"rank failure with only --min-hosts",
       {0, 3, 0},
       rank_failed(),
       NextStep::kFinish,
       "no restarts left (--max-restarts 0)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    RestartPolicy p(c.limits);
    const Decision d = p.after(c.end);
    EXPECT_EQ(d.step, c.step);
    if (*c.why)
      EXPECT_NE(d.why.find(c.why), std::string::npos) << d.why;
    else
      EXPECT_EQ(d.why, "");
  }
}

TEST(RestartPolicy, CountsRestartsNotShrinks) {
  RestartPolicy p({2, 3, 0});
  EXPECT_EQ(p.after(host_lost(3, 6)).step, NextStep::kShrink);
  EXPECT_EQ(p.restarts(), 0);
  EXPECT_EQ(p.after(rank_failed()).step, NextStep::kRestart);
  EXPECT_EQ(p.after(rank_failed()).step, NextStep::kRestart);
  EXPECT_EQ(p.restarts(), 2);
  const Decision last = p.after(rank_failed());
  EXPECT_EQ(last.step, NextStep::kFinish);
  EXPECT_EQ(last.why, "no restarts left (--max-restarts 2)");
}

TEST(RestartPolicy, CanRun) {
  EXPECT_TRUE(RestartPolicy({1, 0, 0}).can_run(4, 8, 4));
  EXPECT_FALSE(RestartPolicy({1, 0, 0}).can_run(3, 6, 4)) << "every host is needed";
  EXPECT_TRUE(RestartPolicy({1, 3, 0}).can_run(3, 6, 4));
  EXPECT_FALSE(RestartPolicy({1, 3, 0}).can_run(2, 4, 4));
  EXPECT_FALSE(RestartPolicy({1, 0, 8}).can_run(3, 6, 4));
  EXPECT_FALSE(RestartPolicy({1, 1, 0}).can_run(0, 0, 4));
  EXPECT_FALSE(RestartPolicy({0, 0, 0}).enabled());
  EXPECT_TRUE(RestartPolicy({0, 2, 0}).enabled());
}

}  // namespace
}  // namespace ferry
