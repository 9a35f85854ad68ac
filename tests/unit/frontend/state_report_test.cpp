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
            "ferryrun: where the ranks are:\n"
            "ferryrun:   rank 0: ended\n"
            "ferryrun:   rank 1: t.py:3 in f\n"
            "ferryrun: end of the state report\n");
}

StateRow answered(int rank, std::string stack) {
  StateRow r;
  r.rank = rank;
  r.host = "n1";
  r.answered = true;
  r.state.stack = std::move(stack);
  return r;
}

// Stacks as ferryd reads them (gdb's bt and py-bt), cut short: an mpi4py rank whose script
// raised, in MPI_Finalize from Python's exit functions, while the others wait in a barrier.
const char* const kBarrier =
    "native:\n"
    "    #0  0x00007f89a7366eab in ?? () from /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/"
    "mca_btl_vader.so\n"
    "    #1  0x00007f89a7d3ce1c in opal_progress () from /lib/x86_64-linux-gnu/libopen-pal.so.40\n"
    "    #5  0x00007f89a7eeb568 in PMPI_Barrier () from /lib/x86_64-linux-gnu/libmpi.so.40\n"
    "    #9  PyObject_Vectorcall (callable=..., args=..., nargsf=..., kwnames=...) at "
    "../Objects/call.c:299\n"
    "python:\n"
    "    Traceback (most recent call first):\n"
    "      File \"/home/u/job/step.py\", line 15, in <module>\n"
    "        comm.Barrier()\n";
const char* const kFinalizeAtExit =
    "native:\n"
    "    #0  0x00007feb459e7545 in __GI___clock_nanosleep (clock_id=..., flags=..., req=..., "
    "rem=...) at ../sysdeps/unix/sysv/linux/clock_nanosleep.c:48\n"
    "    #2  0x00007feb45a17295 in usleep (useconds=...) at ../sysdeps/posix/usleep.c:31\n"
    "    #3  0x00007feb454030a7 in ompi_mpi_finalize () from /lib/x86_64-linux-gnu/libmpi.so.40\n"
    "    #4  0x000000000044e8f3 in call_ll_exitfuncs (runtime=...) at "
    "../Python/pylifecycle.c:2930\n"
    "    #5  Py_FinalizeEx () at ../Python/pylifecycle.c:1929\n"
    "python:\n"
    "    Unable to locate python frame\n";

TEST(StateReport, WhereaboutsNameTheMpiCallAndTheProgramsFrame) {
  EXPECT_EQ(rank_whereabouts(answered(0, kBarrier)), "MPI_Barrier, from step.py:15 in <module>");
  EXPECT_EQ(rank_whereabouts(answered(1, kFinalizeAtExit)),
            "MPI_Finalize at Python's exit, its script over");
  // A torch rank in a collective: the library's function, then the program's frame.
  EXPECT_EQ(
      rank_whereabouts(answered(
          2,
          "native:\n"
          "    #0  __futex_abstimed_wait_common64 (private=..., cancel=...) at "
          "./nptl/futex-internal.c:57\n"
          "python:\n"
          "    Traceback (most recent call first):\n"
          "      <built-in method wait of PyCapsule object at remote 0x7f9c9a5a4660>\n"
          "      File \"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py\","
          " line 1541, in all_reduce\n"
          "        work.wait()\n"
          "      File \"/work/train.py\", line 33, in main\n"
          "        dist.all_reduce(t)\n")),
      "all_reduce (torch/distributed/distributed_c10d.py), from train.py:33 in main");
  // A native program (gdb): the innermost named frame, from the program's own (not a
  // library's, not of a Debian package's sources), with its file where it was built with -g.
  const std::string sleeping =
      "native:\n"
      "    #0  0x00007fc241830545 in __GI___clock_nanosleep (clock_id=...) at "
      "../sysdeps/unix/sysv/linux/clock_nanosleep.c:48\n"
      "    #2  0x00007fc241834d8a in __sleep (seconds=...) at ../sysdeps/posix/sleep.c:55\n"
      "    #3  0x0000563d21b4fe63 in main (argc=..., argv=...) at /home/u/mpi_world.c:129\n"
      "    #4  0x00007f3a in __libc_start_call_main (main=...) at ../sysdeps/nptl/x.h:58\n";
  EXPECT_EQ(rank_whereabouts(answered(3, sleeping)),
            "in __GI___clock_nanosleep, from main (mpi_world.c:129)");
  EXPECT_EQ(rank_whereabouts(answered(
                3,
                "native:\n"
                "    #0  0x00007f in PMPI_Barrier () from /lib/x86_64-linux-gnu/libmpi.so.40\n"
                "    #1  0x000056 in main ()\n")),
            "MPI_Barrier, from main");
  // eu-stack's lines (no arguments, no files): the innermost named frame.
  EXPECT_EQ(rank_whereabouts(answered(3,
                                      "native:\n"
                                      "    #0  0x00007f46cf3b5545 __GI___clock_nanosleep\n"
                                      "    #1  0x00007f46cf3b5600 ??\n")),
            "in __GI___clock_nanosleep");
  EXPECT_EQ(rank_whereabouts(answered(4, "stack: unavailable (install gdb)\n")), "no stack read");
  StateRow gone;
  gone.missing = "ended";
  EXPECT_EQ(rank_whereabouts(gone), "ended");
}

TEST(StateReport, RanksAtTheSamePointAreOneLineAndAFinalizeAtExitIsExplained) {
  const std::string text = format_state_report(
      "ferryrun", "why",
      {answered(2, kBarrier), answered(1, kFinalizeAtExit), answered(0, kBarrier)});
  const size_t where = text.find("ferryrun: where the ranks are:\n");
  ASSERT_NE(where, std::string::npos);
  EXPECT_EQ(text.substr(where),
            "ferryrun: where the ranks are:\n"
            "ferryrun:   ranks 0,2: MPI_Barrier, from step.py:15 in <module>\n"
            "ferryrun:   rank 1: MPI_Finalize at Python's exit, its script over\n"
            "ferryrun: rank 1 is in MPI_Finalize at Python's exit while the others wait "
            "elsewhere: most likely an exception it did not catch ended its script (its "
            "traceback is in its output). mpi4py calls MPI_Finalize at exit, which waits for "
            "every rank; start the script as `python -m mpi4py script.py` and such an "
            "exception ends the job at once\n"
            "ferryrun: end of the state report\n");
  const std::string two = format_state_report(
      "ferryrun", "why",
      {answered(0, kBarrier), answered(1, kFinalizeAtExit), answered(2, kFinalizeAtExit)});
  EXPECT_NE(two.find("ranks 1-2 are in MPI_Finalize at Python's exit while the others wait "
                     "elsewhere: most likely an exception they did not catch ended their "
                     "scripts (their tracebacks are in their output)"),
            std::string::npos);
  // Every rank at Python's exit (a job ending normally, slowly): no hint.
  const std::string all = format_state_report(
      "ferryrun", "why", {answered(0, kFinalizeAtExit), answered(1, kFinalizeAtExit)});
  EXPECT_NE(all.find("ranks 0-1: MPI_Finalize at Python's exit"), std::string::npos);
  EXPECT_EQ(all.find("exception"), std::string::npos);
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
