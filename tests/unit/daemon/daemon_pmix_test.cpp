// ferryd's PMIx server against real PMIx clients: the test plays ferryrun over pipes (it
// answers the fences itself, as the front end would for a one-host job), ferryd starts
// tests/unit/daemon/pmix_test_client.c as two real ranks, and libpmix does the rest: a fence
// with data, job facts, an abort, and a rank that leaves without PMIx_Finalize. Needs
// libpmix.so.2 (Debian's libpmix2, which libpmix-dev brings).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "daemon_front_end.hpp"

namespace ferry {
namespace {

using test_support::FrontEnd;

class DaemonPmix : public ::testing::Test {
 protected:
  void SetUp() override { ::signal(SIGPIPE, SIG_IGN); }

  // Ranks 0 and 1 of a job of 2 on this one host, running the PMIx test client in `mode`.
  static wire::HostSpec spec(const std::string& job, const std::string& mode) {
    wire::HostSpec s;
    s.job_id = job;
    s.argv = {std::string(FERRY_BIN_DIR) + "/pmix_test_client", mode};
    s.world_size = 2;
    s.pmi = true;
    s.binding.bind_to = BindTo::kNone;
    s.node_names = {"pmix-test-host"};
    s.node_of_rank = {0, 0};
    for (int r = 0; r < 2; ++r) s.ranks.push_back({r, {}, {}});
    return s;
  }

  // Answers every fence report of `fe` not answered yet with the data it carried (the
  // front end of a one-host job: all hosts' data is this host's).
  static void answer_fences(FrontEnd& fe, size_t& answered) {
    auto fences = fe.all<wire::PmixFence>();
    for (; answered < fences.size(); ++answered)
      fe.send(wire::PmixFenceDone{{fences[answered].seq, fences[answered].data}});
  }

  static std::vector<std::string> pmix_dirs() {
    std::vector<std::string> out;
    const char* tmp = ::getenv("TMPDIR");
    for (const auto& e : std::filesystem::directory_iterator(tmp && *tmp ? tmp : "/tmp"))
      if (e.path().filename().string().starts_with("ferry-pmix-")) out.push_back(e.path());
    return out;
  }
};

TEST_F(DaemonPmix, TwoRealClientsExchangeDataThroughOneFenceAndFinalize) {
  const auto dirs_before = pmix_dirs();
  {
    FrontEnd fe(nullptr);
    fe.send(spec("pmix-exchange", "exchange"));
    size_t answered = 0;
    ASSERT_TRUE(fe.run_until(
        [&] {
          answer_fences(fe, answered);
          return fe.all<wire::Exited>().size() == 2;
        },
        std::chrono::milliseconds(20000)))
        << "stdout 0: " << fe.output(0, StreamId::kStdout)
        << " stderr 0: " << fe.output(0, StreamId::kStderr)
        << " stderr 1: " << fe.output(1, StreamId::kStderr);
    for (const auto& e : fe.all<wire::Exited>()) {
      EXPECT_EQ(0, e.exit_code) << "rank " << e.rank << ": "
                                << fe.output(e.rank, StreamId::kStderr);
      EXPECT_EQ(0, e.signal);
    }
    EXPECT_EQ("rank 0 size 2 local 0 peer says value-1\n", fe.output(0, StreamId::kStdout));
    EXPECT_EQ("rank 1 size 2 local 1 peer says value-0\n", fe.output(1, StreamId::kStdout));
    // One fence report for the host, whatever its rank count; no failure after finalize.
    EXPECT_GE(fe.all<wire::PmixFence>().size(), 1u);
    EXPECT_EQ(1u, fe.all<wire::PmixFence>()[0].seq);
    EXPECT_TRUE(fe.all<wire::Failure>().empty());
    fe.hang_up();
    ASSERT_TRUE(fe.run_until([&] { return fe.stopped(); }));
  }
  EXPECT_EQ(dirs_before, pmix_dirs()) << "the server's directory is left";
}

TEST_F(DaemonPmix, AbortBecomesAnAbortFrameWithTheStatus) {
  FrontEnd fe(nullptr);
  fe.send(spec("pmix-abort", "abort"));
  size_t answered = 0;
  ASSERT_TRUE(fe.run_until([&] { return !fe.all<wire::PmiAbort>().empty(); },
                           std::chrono::milliseconds(20000)));
  (void)answered;
  auto aborts = fe.all<wire::PmiAbort>();
  EXPECT_EQ(1, aborts[0].rank);
  EXPECT_EQ(7, aborts[0].exit_code);
  EXPECT_EQ("asked to", aborts[0].message);
  fe.send(wire::Terminate{0});
  ASSERT_TRUE(fe.run_until([&] { return fe.all<wire::Exited>().size() == 2; }));
}

TEST_F(DaemonPmix, LeavingWithoutFinalizeFailsTheRankThoughItExitedZero) {
  FrontEnd fe(nullptr);
  fe.send(spec("pmix-nofin", "no-finalize"));
  ASSERT_TRUE(fe.run_until([&] { return fe.all<wire::Exited>().size() == 2; },
                           std::chrono::milliseconds(20000)));
  auto failures = fe.all<wire::Failure>();
  ASSERT_EQ(2u, failures.size());
  for (const auto& f : failures)
    EXPECT_NE(f.message.find("without calling MPI_Finalize"), std::string::npos) << f.message;
  // Each failure comes before that rank's exit, so the front end counts it.
  EXPECT_LT(fe.index_of<wire::Failure>(), fe.index_of<wire::Exited>());
}

TEST_F(DaemonPmix, RanksGetThePmixVariables) {
  FrontEnd fe(nullptr);
  auto s = spec("pmix-env", "unused");
  s.argv = {"/bin/sh", "-c", "echo \"$PMIX_NAMESPACE $PMIX_RANK ${PMIX_SERVER_URI41:+uri}\""};
  fe.send(s);
  ASSERT_TRUE(fe.run_until([&] { return fe.all<wire::Exited>().size() == 2; }));
  EXPECT_EQ("ferry.pmix-env.0 0 uri\n", fe.output(0, StreamId::kStdout));
  EXPECT_EQ("ferry.pmix-env.0 1 uri\n", fe.output(1, StreamId::kStdout));
  // Ranks that never call PMIx_Init are not failed for it.
  EXPECT_TRUE(fe.all<wire::Failure>().empty());
}

}  // namespace
}  // namespace ferry
