#include "ferry/frontend/state_report.hpp"

#include <gtest/gtest.h>

#include "ferry/frontend/job_end.hpp"

namespace ferry {
namespace {

TEST(StateReport, RanksInOrderWithStateCpuSilenceAndStack) {
  StateRow a;
  a.rank = 1;
  a.host = "n2";
  a.answered = true;
  a.state.pid = 42;
  a.state.state = "sleeping";
  a.state.cpu_permille = 995;
  a.state.sample_ms = 1000;
  a.state.threads = 3;
  a.state.stack = "native:\n    #0 poll\npython:\n    File \"t.py\", line 3, in f\n";
  a.since_output_s = 12.34;
  StateRow b;
  b.rank = 0;
  b.host = "n1";
  b.missing = "ended";
  const std::string text = format_state_report("ferryrun", "why", {a, b});
  EXPECT_EQ(text,
            "ferryrun: state of every rank (why):\n"
            "ferryrun: rank 0 on n1: ended\n"
            "ferryrun: rank 1 on n2: pid 42, sleeping, CPU 100% over the last 1.0 s, 3 "
            "thread(s), last output 12.3 s ago\n"
            "    native:\n"
            "        #0 poll\n"
            "    python:\n"
            "        File \"t.py\", line 3, in f\n"
            "ferryrun: end of the state report\n");
}

TEST(JobEnd, TimeoutIs124UnlessSomethingEndedTheJobFirst) {
  JobEnd e;
  EXPECT_TRUE(e.timed_out());
  EXPECT_TRUE(e.aborting());
  EXPECT_FALSE(e.rank_ended(0, 15, false));  // ranks the abort stopped are no failure
  EXPECT_EQ(e.exit_status(), kTimeoutExitStatus);
  JobEnd f;
  EXPECT_TRUE(f.rank_ended(3, 0, false));
  EXPECT_FALSE(f.timed_out());
  EXPECT_EQ(f.exit_status(), 3);
}

}  // namespace
}  // namespace ferry
