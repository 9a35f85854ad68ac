// The failure report block, byte for byte, for each kind of failure and each optional part.
#include "ferry/frontend/failure_report.hpp"

#include <gtest/gtest.h>
#include <signal.h>

namespace ferry {
namespace {

const std::string kRule =
    "--------------------------------------------------------------------------\n";

TEST(FailureReport, EachKindAndItsOptionalParts) {
  struct Case {
    const char* name;
    JobFailure failure;
    std::string expected;
  };
  const RankWhere r1{1, "node2", 0, 1001};
  const RankWhere no_pid{0, "node1", 0, 0};
  const std::vector<Case> cases = {
      {"exit status, others aborted", RankExitFailure{r1, 5, 0, "", true, 1.5, {}},
       kRule +
           "mpirun: rank 1 on host node2 (local rank 0, pid 1001) exited with status 5.\n"
           "The job was aborted: the other ranks get SIGTERM, then SIGKILL after 1.5 s.\n" +
           kRule},
      {"signal with a reason, no pid, alone in the job",
       RankExitFailure{no_pid, 0, SIGSEGV, "PMI socket closed before finalize", false, 5, {}},
       kRule +
           "mpirun: rank 0 on host node1 (local rank 0) was killed by SIGSEGV (Segmentation "
           "fault).\n"
           "  reason: PMI socket closed before finalize\n" +
           kRule},
      {"grace printed as %g", RankExitFailure{r1, 2, 0, "", true, 10, {}},
       kRule +
           "mpirun: rank 1 on host node2 (local rank 0, pid 1001) exited with status 2.\n"
           "The job was aborted: the other ranks get SIGTERM, then SIGKILL after 10 s.\n" +
           kRule},
      {"MPI_Abort with a message", PmiAbortFailure{RankWhere{3, "node2", 1, 1003}, 7, "bad input"},
       kRule +
           "mpirun: rank 3 on host node2 (local rank 1, pid 1003) called MPI_Abort (PMI "
           "abort) with exit code 7.\n"
           "  message: bad input\n"
           "The job was aborted.\n" +
           kRule},
      {"MPI_Abort without a message", PmiAbortFailure{no_pid, 1, ""},
       kRule +
           "mpirun: rank 0 on host node1 (local rank 0) called MPI_Abort (PMI abort) with exit "
           "code 1.\n"
           "The job was aborted.\n" +
           kRule},
      {"Open MPI's placeholder message is no message", PmiAbortFailure{no_pid, 7, "N/A"},
       kRule +
           "mpirun: rank 0 on host node1 (local rank 0) called MPI_Abort (PMI abort) with exit "
           "code 7.\n"
           "The job was aborted.\n" +
           kRule},
      {"lost host", HostLostFailure{"10.0.0.5:2202", "no heartbeat for 3 s", 2},
       kRule +
           "mpirun: lost host 10.0.0.5:2202 (no heartbeat for 3 s) with 2 rank(s) still "
           "running.\n"
           "The job was aborted; ferryd on that host kills its ranks when its connection "
           "ends.\n" +
           kRule},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(format_failure_report("mpirun", c.failure), c.expected);
  }
}

// With restarts on, the block names the attempt and does not claim the job is over; what the
// rank wrote to its torchelastic error file is shown, traceback indented.
TEST(FailureReport, AttemptAndTorchErrorFile) {
  RankExitFailure f{RankWhere{3, "fnode2", 1, 77}, 1, 0, "", true, 5, {}};
  f.error_file =
      R"({"message": {"message": "RuntimeError: boom", "extraInfo": {"py_callstack": )"
      R"("Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n)"
      R"(RuntimeError: boom\n", "timestamp": "1700000000"}}})";
  EXPECT_EQ(format_failure_report("ferryrun", f, 2),
            kRule +
                "ferryrun: attempt 2: rank 3 on host fnode2 (local rank 1, pid 77) exited with "
                "status 1.\n"
                "  error: RuntimeError: boom\n"
                "  traceback:\n"
                "    Traceback (most recent call last):\n"
                "      File \"train.py\", line 9, in <module>\n"
                "    RuntimeError: boom\n"
                "This attempt is over: the other ranks get SIGTERM, then SIGKILL after 5 s.\n" +
                kRule);
  // Not JSON: its first line still says something.
  f.error_file = "Segfault in native code\nmore";
  EXPECT_NE(format_failure_report("ferryrun", f).find("  error: Segfault in native code\n"),
            std::string::npos);
  // A long traceback keeps its last lines.
  std::string cs;
  for (int i = 0; i < 100; ++i) cs += "line " + std::to_string(i) + "\\n";
  f.error_file =
      R"({"message": {"message": "E: x", "extraInfo": {"py_callstack": ")" + cs + "\"}}}";
  const std::string block = format_failure_report("ferryrun", f);
  EXPECT_NE(block.find("    ... (70 lines)\n    line 70\n"), std::string::npos) << block;
  EXPECT_EQ(block.find("line 69\n"), std::string::npos);
}

TEST(FailureReport, SignalNames) {
  EXPECT_EQ(signal_name(SIGTERM), "SIGTERM (Terminated)");
  EXPECT_EQ(signal_name(SIGKILL), "SIGKILL (Killed)");
  EXPECT_EQ(signal_name(SIGINT), "SIGINT (Interrupt)");
}

}  // namespace
}  // namespace ferry
