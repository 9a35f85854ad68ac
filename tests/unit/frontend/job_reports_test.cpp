// What the user reads when a job fails, byte for byte: one framed block per failure (a rank's
// exit, its MPI_Abort, a lost host) and the exit status that goes with it. The daemons are
// played in-process (fake_daemon.hpp).
#include <gtest/gtest.h>
#include <signal.h>

#include "fake_daemon.hpp"

namespace ferry {
namespace {

using test_support::FakeDaemonLink;
using test_support::FakeScript;
using test_support::run_with_fake_daemons;

const std::string kRule =
    "--------------------------------------------------------------------------\n";

// The failure reports alone: the job summary that follows a failure is job_summary_test's.
std::string report_of(const std::string& diag) {
  return diag.substr(0, diag.find("ferryrun: job summary"));
}

JobOptions two_hosts(int slots_each) {
  JobOptions o;
  for (const char* name : {"node1", "node2"}) {
    HostEntry h;
    h.name = name;
    h.slots = slots_each;
    o.hosts.push_back(h);
  }
  o.command = {"app"};
  o.wdir = "/tmp";
  o.kill_grace_s = 1.5;
  return o;
}

// node2 runs `script`; node1's ranks start and run until they are told to stop.
std::function<FakeScript(const HostEntry&)> on_node2(FakeScript script) {
  return [script](const HostEntry& h) -> FakeScript {
    if (h.name == "node2") return script;
    return [](FakeDaemonLink& d) { d.start_all(); };
  };
}

TEST(JobReports, RankExitNamesRankHostPidAndTheGracePeriod) {
  auto r = run_with_fake_daemons(two_hosts(1), on_node2([](FakeDaemonLink& d) {
                                   d.start_all();
                                   d.rank_exits(1, 5);
                                 }));
  EXPECT_EQ(r.status, 5);
  EXPECT_NE(r.diag.find("ferryrun: job summary: 2 ranks on 2 hosts\n"), std::string::npos);
  EXPECT_EQ(report_of(r.diag),
            kRule +
                "ferryrun: rank 1 on host node2 (local rank 0, pid 1001) exited with "
                "status 5.\n"
                "The job was aborted: the other ranks get SIGTERM, then SIGKILL after "
                "1.5 s.\n" +
                kRule);
}

TEST(JobReports, SignalWithAReasonAndNoPidOnASingleRankJob) {
  JobOptions o = two_hosts(1);
  o.hosts.pop_back();
  o.np = 1;
  // ferryd's reason fails the rank; it never started, so there is no pid to show.
  auto r = run_with_fake_daemons(o, [](const HostEntry&) -> FakeScript {
    return [](FakeDaemonLink& d) {
      d.send_frame(wire::encode(wire::Failure{0, "cannot start 'app': No such file"}));
      d.rank_exits(0, 0, SIGSEGV);
      d.done_if_all_ended();
    };
  });
  EXPECT_EQ(r.status, 128 + SIGSEGV);
  EXPECT_EQ(report_of(r.diag),
            kRule +
                "ferryrun: rank 0 on host node1 (local rank 0) was killed by SIGSEGV "
                "(Segmentation fault).\n"
                "  reason: cannot start 'app': No such file\n" +
                kRule);
}

TEST(JobReports, PmiAbortEndsTheJobWithTheRanksCode) {
  auto r = run_with_fake_daemons(two_hosts(2), on_node2([](FakeDaemonLink& d) {
                                   d.start_all();
                                   d.send_frame(wire::encode(wire::PmiAbort{3, 7, "bad input"}));
                                 }));
  EXPECT_EQ(r.status, 7);
  EXPECT_EQ(report_of(r.diag), kRule +
                                   "ferryrun: rank 3 on host node2 (local rank 1, pid 1003) called "
                                   "MPI_Abort (PMI abort) with exit code 7.\n"
                                   "  message: bad input\n"
                                   "The job was aborted.\n" +
                                   kRule);
}

TEST(JobReports, LostHostCountsItsRanksStillRunning) {
  auto r = run_with_fake_daemons(two_hosts(3), on_node2([](FakeDaemonLink& d) {
                                   d.start_all();
                                   d.rank_exits(3, 0);
                                   d.cut("connection reset by peer");
                                 }));
  EXPECT_EQ(r.status, 255);
  EXPECT_EQ(report_of(r.diag),
            kRule +
                "ferryrun: lost host node2 (connection reset by peer) with 2 rank(s) "
                "still running.\n"
                "The job was aborted; ferryd on that host kills its ranks when its "
                "connection ends.\n" +
                kRule);
}

TEST(JobReports, OnlyTheFirstFailureIsReported) {
  auto r = run_with_fake_daemons(two_hosts(2), on_node2([](FakeDaemonLink& d) {
                                   d.start_all();
                                   d.rank_exits(2, 4);
                                   d.rank_exits(3, 6);
                                 }));
  EXPECT_EQ(r.status, 4);
  EXPECT_EQ(report_of(r.diag).find("rank 3"), std::string::npos) << r.diag;
}

TEST(JobReports, CleanJobSaysNothing) {
  auto r = run_with_fake_daemons(two_hosts(2));
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.diag, "");
  EXPECT_EQ(r.specs.size(), 2u);
}

}  // namespace
}  // namespace ferry
