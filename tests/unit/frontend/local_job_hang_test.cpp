// --timeout and --stall-timeout with the real ferryd over the local launcher: the state report
// (pid, state, stack as the host's debugger reads it), the abort, and the exit status.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <string>

#include "ferry/frontend/job.hpp"
#include "ferry/frontend/job_end.hpp"
#include "ferry/transport/local_launcher.hpp"
#include "frontend/local_job_options.hpp"
#include "job_test_support.hpp"
#include "refusing_launcher.hpp"

namespace ferry {
namespace {

struct Run {
  int status = -1;
  std::string diag;
};

Run run_job(JobOptions opts) {
  Run r;
  NullSink out;
  asio::io_context io;
  char path[] = "/tmp/ferry-diag-XXXXXX";
  int fd = ::mkstemp(path);
  ::unlink(path);
  Diagnostics diag(&out, fd, false);
  LocalLauncher local(io);
  test_support::RefusingLauncher remote(io);
  opts.ferryd_path = std::string(FERRY_BIN_DIR) + "/ferryd";
  opts.stdin_rank = -1;
  Job job(io, std::move(opts), Launchers{local, remote}, out, diag);
  r.status = job.run();
  r.diag = read_all(fd);
  ::close(fd);
  return r;
}

bool have(const char* tool) {
  return ::access((std::string("/usr/bin/") + tool).c_str(), X_OK) == 0;
}

TEST(LocalJobHang, TimeoutReportsEveryRankThenAbortsWithItsOwnStatus) {
  JobOptions o = local_job(2, {"sh", "-c", "echo started; exec sleep 60"});
  o.timeout_s = 2;
  auto r = run_job(o);
  EXPECT_EQ(r.status, kTimeoutExitStatus) << r.diag;
  EXPECT_NE(r.diag.find("--timeout 2 s reached"), std::string::npos) << r.diag;
  EXPECT_NE(r.diag.find("state of every rank"), std::string::npos) << r.diag;
  for (const char* rank : {"rank 0 on localhost: pid ", "rank 1 on localhost: pid "})
    EXPECT_NE(r.diag.find(rank), std::string::npos) << r.diag;
  EXPECT_NE(r.diag.find("sleeping, CPU "), std::string::npos) << r.diag;
  EXPECT_NE(r.diag.find("last output "), std::string::npos) << r.diag;
  if (have("gdb") || have("eu-stack")) {
    EXPECT_NE(r.diag.find("native:\n"), std::string::npos) << r.diag;
    EXPECT_NE(r.diag.find("#0"), std::string::npos) << r.diag;
  } else {
    EXPECT_NE(r.diag.find("stack: unavailable (install gdb"), std::string::npos) << r.diag;
  }
  // The report is not taken for a failure of the ranks it stopped.
  EXPECT_EQ(r.diag.find("exited with"), std::string::npos) << r.diag;
}

TEST(LocalJobHang, JobWithinItsTimeoutEndsAsUsual) {
  JobOptions o = local_job(1, {"sh", "-c", "exit 3"});
  o.timeout_s = 30;
  auto r = run_job(o);
  EXPECT_EQ(r.status, 3) << r.diag;
  EXPECT_EQ(r.diag.find("state of every rank"), std::string::npos) << r.diag;
}

TEST(LocalJobHang, StallAbortReportsTheSilenceAndEndsTheJob) {
  JobOptions o = local_job(1, {"sh", "-c", "echo one; exec sleep 60"});
  o.stall_timeout_s = 1;
  o.stall_abort = true;
  auto r = run_job(o);
  EXPECT_EQ(r.status, kTimeoutExitStatus) << r.diag;
  EXPECT_NE(r.diag.find("no rank printed anything for 1 s"), std::string::npos) << r.diag;
  EXPECT_NE(r.diag.find("rank 0 on localhost: pid "), std::string::npos) << r.diag;
}

TEST(LocalJobHang, StallReportAloneLetsTheJobFinish) {
  // Long enough for the report (a second's CPU sample, then the debugger) to come first.
  JobOptions o = local_job(1, {"sh", "-c", "sleep 10; echo late"});
  o.stall_timeout_s = 1;
  auto r = run_job(o);
  EXPECT_EQ(r.status, 0) << r.diag;
  EXPECT_NE(r.diag.find("no rank printed anything for 1 s"), std::string::npos) << r.diag;
}

JobOptions two_local_hosts(std::vector<std::string> cmd) {
  JobOptions o = local_job(2, std::move(cmd));
  HostEntry a, b;
  a.name = "localhost";
  b.name = "127.0.0.1";
  o.hosts = {a, b};
  return o;
}

TEST(LocalJobHang, PreflightPassesWhereRankZerosAddressIsReachable) {
  auto r = run_job(two_local_hosts({"sh", "-c", "echo $MASTER_ADDR"}));
  EXPECT_EQ(r.status, 0) << r.diag;
  EXPECT_EQ(r.diag.find("preflight"), std::string::npos) << r.diag;
}

TEST(LocalJobHang, PreflightFailsTheLaunchWhenRankZerosHostCannotListenThere) {
  JobOptions o = two_local_hosts({"sh", "-c", "echo started"});
  o.exports = {"MASTER_ADDR=192.0.2.7"};  // TEST-NET-1: on no host
  auto r = run_job(o);
  EXPECT_EQ(r.status, 1) << r.diag;
  EXPECT_NE(r.diag.find("preflight: localhost cannot listen on 192.0.2.7:"), std::string::npos)
      << r.diag;
  EXPECT_NE(r.diag.find("hosts failed the preflight"), std::string::npos) << r.diag;
  o.preflight = false;  // --no-preflight: the ranks start (and meet nowhere, which sh ignores)
  EXPECT_EQ(run_job(o).status, 0);
}

}  // namespace
}  // namespace ferry
