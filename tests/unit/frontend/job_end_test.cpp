// How a job ends (JobEnd): which event is the job's failure and what ferryrun exits with.
#include "ferry/frontend/job_end.hpp"

#include <gtest/gtest.h>
#include <signal.h>

namespace ferry {
namespace {

TEST(JobEnd, CleanJobExitsZero) {
  JobEnd e;
  EXPECT_FALSE(e.rank_ended(0, 0, false));
  EXPECT_FALSE(e.host_lost(0));  // a host that closes with nothing running is no failure
  EXPECT_EQ(e.exit_status(), 0);
}

TEST(JobEnd, TheFirstFailingRankDecidesAndStartsTheAbort) {
  JobEnd e;
  EXPECT_TRUE(e.rank_ended(3, 0, false));
  EXPECT_TRUE(e.aborting());
  EXPECT_FALSE(e.rank_ended(4, 0, false));  // a consequence of the abort
  EXPECT_FALSE(e.rank_ended(0, SIGTERM, false));
  EXPECT_FALSE(e.host_lost(2));
  EXPECT_EQ(e.exit_status(), 3);
}

TEST(JobEnd, StatusOfAFailingRank) {
  struct Case {
    int code, sig;
    bool reported;
    int status;
  };
  for (Case c : {Case{5, 0, false, 5}, Case{0, SIGSEGV, false, 128 + SIGSEGV}, Case{0, 0, true, 1},
                 Case{2, 0, true, 2}}) {
    JobEnd e;
    EXPECT_TRUE(e.rank_ended(c.code, c.sig, c.reported));
    EXPECT_EQ(e.exit_status(), c.status) << c.code << " " << c.sig << " " << c.reported;
  }
}

TEST(JobEnd, MpiAbortIsTheRanksCode) {
  JobEnd e;
  EXPECT_TRUE(e.rank_aborted(7));
  EXPECT_FALSE(e.rank_aborted(8));
  EXPECT_EQ(e.exit_status(), 7);
}

TEST(JobEnd, LostHostIs255UnlessSomethingCameFirst) {
  JobEnd lost;
  EXPECT_TRUE(lost.host_lost(1));
  EXPECT_TRUE(lost.aborting());
  EXPECT_FALSE(lost.rank_ended(0, SIGKILL, false));
  EXPECT_EQ(lost.exit_status(), 255);

  JobEnd interrupted;
  EXPECT_TRUE(interrupted.interrupted(SIGINT));
  EXPECT_FALSE(interrupted.host_lost(1));  // the user is ending the job anyway
  EXPECT_EQ(interrupted.exit_status(), 128 + SIGINT);
}

TEST(JobEnd, TheUsersSignalIsNoRankFailure) {
  JobEnd e;
  EXPECT_TRUE(e.interrupted(SIGTERM));
  EXPECT_FALSE(e.interrupted(SIGINT));  // the second: the caller kills every rank at once
  EXPECT_EQ(e.user_signal(), SIGTERM);
  EXPECT_FALSE(e.rank_ended(0, SIGTERM, false));
  // A rank that fails in its own way while the signal is handled still counts.
  EXPECT_TRUE(e.rank_ended(3, 0, false));
  EXPECT_EQ(e.exit_status(), 3);
}

TEST(JobEnd, StartFailureIsOneOr128PlusTheSignal) {
  JobEnd e;
  e.start_failed();
  EXPECT_EQ(e.exit_status(), 1);
  e.interrupted(SIGINT);
  EXPECT_EQ(e.exit_status(), 128 + SIGINT);
}

TEST(JobEnd, ARefusalFoundOnceTheHostsAnsweredIsBadInput) {
  JobEnd e;
  e.refused();
  EXPECT_EQ(e.exit_status(), 2);
  e.interrupted(SIGINT);
  EXPECT_EQ(e.exit_status(), 2);
}

}  // namespace
}  // namespace ferry
