// The job controller with the real ferryd over the local launcher, and a fake remote
// launcher for start failures. No SSH: these run anywhere.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>

#include "ferry/frontend/job.hpp"
#include "ferry/transport/local_launcher.hpp"
#include "frontend/local_job_options.hpp"
#include "job_test_support.hpp"
#include "refusing_launcher.hpp"

namespace ferry {
namespace {

class CaptureSink : public OutputSink {
 public:
  void write(int rank, StreamId s, std::string_view b) override { data[{rank, s}].append(b); }
  void close_stream(int rank, StreamId s) override { closed[{rank, s}] = true; }
  void flush() override {}
  std::map<std::pair<int, StreamId>, std::string> data;
  std::map<std::pair<int, StreamId>, bool> closed;
};

struct Run {
  int status = -1;
  CaptureSink out;
  std::string diag;
};

Run run_job(JobOptions opts) {
  Run r;
  asio::io_context io;
  char path[] = "/tmp/ferry-diag-XXXXXX";
  int fd = ::mkstemp(path);
  ::unlink(path);
  Diagnostics diag(&r.out, fd, false);
  LocalLauncher local(io);
  test_support::RefusingLauncher remote(io);
  if (opts.ferryd_path.empty()) opts.ferryd_path = std::string(FERRY_BIN_DIR) + "/ferryd";
  opts.stdin_rank = -1;
  Job job(io, std::move(opts), Launchers{local, remote}, r.out, diag);
  r.status = job.run();
  r.diag = read_all(fd);
  ::close(fd);
  return r;
}

TEST(LocalJob, AllRanksSucceedAndOutputArrivesPerRankAndStream) {
  auto r = run_job(local_job(3, {"sh", "-c", "echo out$RANK; echo err$RANK >&2; pwd"}));
  EXPECT_EQ(r.status, 0) << r.diag;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(r.out.data[std::make_pair(i, StreamId::kStdout)],
              "out" + std::to_string(i) + "\n/tmp\n");
    EXPECT_EQ(r.out.data[std::make_pair(i, StreamId::kStderr)], "err" + std::to_string(i) + "\n");
    EXPECT_TRUE(r.out.closed[std::make_pair(i, StreamId::kStdout)]);
  }
}

TEST(LocalJob, FirstFailingRankDecidesTheStatusAndTheOthersAreStopped) {
  auto r = run_job(local_job(3, {"sh", "-c", "if [ $RANK = 1 ]; then exit 7; fi; sleep 30"}));
  EXPECT_EQ(r.status, 7);
  EXPECT_NE(r.diag.find("rank 1 on host localhost"), std::string::npos) << r.diag;
  EXPECT_NE(r.diag.find("exited with status 7"), std::string::npos) << r.diag;
  EXPECT_NE(r.diag.find("aborted"), std::string::npos) << r.diag;
}

TEST(LocalJob, KilledRankGives128PlusSignalAndNamesIt) {
  auto r =
      run_job(local_job(2, {"sh", "-c", "if [ $RANK = 0 ]; then kill -SEGV $$; fi; sleep 30"}));
  EXPECT_EQ(r.status, 128 + SIGSEGV);
  EXPECT_NE(r.diag.find("SIGSEGV"), std::string::npos) << r.diag;
}

TEST(LocalJob, RankIgnoringSigtermIsKilledAfterTheGrace) {
  auto start = std::chrono::steady_clock::now();
  auto r = run_job(local_job(
      2,
      {"sh", "-c", "if [ $RANK = 0 ]; then exit 3; fi; trap '' TERM; sleep 30 & wait; sleep 30"}));
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.status, 3);
  EXPECT_LT(took, 20.0);  // not the 30 s the rank wanted: SIGKILL came after the grace
}

TEST(LocalJob, CommandNotFoundIsReportedWithTheReason) {
  auto r = run_job(local_job(1, {"no-such-command-ferry"}));
  EXPECT_EQ(r.status, 127);
  EXPECT_NE(r.diag.find("no-such-command-ferry"), std::string::npos) << r.diag;
  EXPECT_NE(r.diag.find("not found"), std::string::npos) << r.diag;
}

TEST(LocalJob, MissingWorkingDirectoryGivenExplicitlyFailsTheRank) {
  auto o = local_job(1, {"true"});
  o.wdir = "/nonexistent/dir";
  o.wdir_explicit = true;
  auto r = run_job(o);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.diag.find("/nonexistent/dir"), std::string::npos) << r.diag;
}

TEST(LocalJob, EveryFailingHostIsReportedAtOnce) {
  auto o = local_job(1, {"sleep", "30"});
  HostEntry a, b;
  a.name = "deadhost1";
  b.name = "deadhost2";
  o.hosts.push_back(a);
  o.hosts.push_back(b);
  o.np = 3;
  auto start = std::chrono::steady_clock::now();
  auto r = run_job(o);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.diag.find("deadhost1:22: cannot connect"), std::string::npos) << r.diag;
  EXPECT_NE(r.diag.find("deadhost2:22: cannot connect"), std::string::npos) << r.diag;
  EXPECT_NE(r.diag.find("did not start"), std::string::npos) << r.diag;
  EXPECT_LT(took, 10.0);  // nothing was started on localhost, so nothing to wait for
}

TEST(LocalJob, MissingLocalFerrydIsNamed) {
  auto o = local_job(1, {"true"});
  o.ferryd_path = "/nonexistent/ferryd";
  auto r = run_job(o);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.diag.find("ferryd not found at /nonexistent/ferryd"), std::string::npos) << r.diag;
}

TEST(LocalJob, PlacementErrorExitsTwo) {
  auto o = local_job(1, {"true"});
  o.np = 5;
  auto r = run_job(o);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.diag.find("--oversubscribe"), std::string::npos);
}

TEST(LocalJob, DaemonizedGrandchildIsCleanedUp) {
  // The rank starts a setsid'ed sleeper that leaves its process group, then exits 0.
  std::string marker = "ferry-grandchild-" + std::to_string(::getpid());
  auto r = run_job(local_job(1, {"sh", "-c",
                                 "setsid bash -c 'exec -a " + marker +
                                     " sleep 60' </dev/null >/dev/null 2>&1 & sleep 0.2"}));
  EXPECT_EQ(r.status, 0) << r.diag;
  ::usleep(300000);
  // "[f]erry-..." matches the sleeper but not the shell running pgrep.
  std::string cmd = "pgrep -f '[f]" + marker.substr(1) + "' >/dev/null";
  EXPECT_NE(std::system(cmd.c_str()), 0) << "the daemonised grandchild survived the job";
}

}  // namespace
}  // namespace ferry

namespace ferry {
namespace {

// ferryd splices rank output into its stream; FERRY_OUTPUT_COPY=1 takes the copying path.
// Both must deliver megabytes per rank and stream, byte for byte.
class LocalJobOutputPath : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam()) ::setenv("FERRY_OUTPUT_COPY", "1", 1);
  }
  void TearDown() override { ::unsetenv("FERRY_OUTPUT_COPY"); }
};

std::string seq_text(int n) {
  std::string s;
  for (int i = 1; i <= n; ++i) s += std::to_string(i) + "\n";
  return s;
}

TEST_P(LocalJobOutputPath, MegabytesPerRankArriveByteForByte) {
  auto r = run_job(local_job(3, {"sh", "-c", "seq 1 300000; seq 1 70000 >&2; seq 1 5"}));
  EXPECT_EQ(r.status, 0) << r.diag;
  const std::string out = seq_text(300000) + seq_text(5), err = seq_text(70000);
  for (int i = 0; i < 3; ++i) {
    const auto& got_out = r.out.data[std::make_pair(i, StreamId::kStdout)];
    const auto& got_err = r.out.data[std::make_pair(i, StreamId::kStderr)];
    EXPECT_EQ(got_out.size(), out.size()) << "rank " << i;
    EXPECT_TRUE(got_out == out) << "rank " << i << " stdout differs";
    EXPECT_TRUE(got_err == err) << "rank " << i << " stderr differs";
    EXPECT_TRUE(r.out.closed[std::make_pair(i, StreamId::kStdout)]);
  }
}

INSTANTIATE_TEST_SUITE_P(SpliceAndCopy, LocalJobOutputPath, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Copy" : "Splice"; });

}  // namespace
}  // namespace ferry
