// The job summary: per host (ranks as ranges, longest wall, summed CPU, largest RSS, the
// exits that were not 0) and per rank.
#include "ferry/frontend/job_summary.hpp"

#include <gtest/gtest.h>

#include <csignal>

namespace ferry {
namespace {

TEST(JobSummary, PerHostFoldsTheRanksOfEachHost) {
  JobSummary s;
  s.begin({"node1", "node1", "node2", "node2"});
  s.exited(0, 0, 0, 2'000'000, 1'500'000, 2048);
  s.exited(1, 0, 0, 3'000'000, 1'000'000, 4096);
  s.exited(2, 3, 0, 1'000'000, 500'000, 1024);
  // rank 3 never reported (its host was lost)
  const std::string text = s.format("ferryrun", false);
  EXPECT_EQ(text,
            "ferryrun: job summary: 4 ranks on 2 hosts\n"
            "  host   ranks  wall   cpu    peak rss  exit\n"
            "  node1  0-1    3.0 s  2.5 s  4 MiB     0\n"
            "  node2  2-3    1.0 s  0.5 s  1 MiB     3 (rank 2), lost (rank 3)\n");
}

// Processes MPI_Comm_spawn started count with their host, under their names.
TEST(JobSummary, SpawnedProcessesCountWithTheirHostUnderTheirNames) {
  JobSummary s;
  s.begin({"node1", "node2"});
  s.spawned(2, "node1", "spawn1:0");
  s.spawned(3, "node2", "spawn1:1");
  s.spawned(7, "node2", "spawn9:9");  // not the next number: ignored
  s.exited(0, 0, 0, 1'000'000, 1'000'000, 1024);
  s.exited(1, 0, 0, 1'000'000, 1'000'000, 1024);
  s.exited(2, 0, 0, 2'000'000, 500'000, 4096);
  s.exited(3, 5, 0, 1'000'000, 500'000, 1024);
  EXPECT_EQ(s.format("ferryrun", false),
            "ferryrun: job summary: 2 ranks and 2 spawned processes on 2 hosts\n"
            "  host   ranks         wall   cpu    peak rss  exit\n"
            "  node1  0 +1 spawned  2.0 s  1.5 s  4 MiB     0\n"
            "  node2  1 +1 spawned  1.0 s  1.5 s  1 MiB     5 (spawn1:1)\n");
  EXPECT_EQ(s.format("ferryrun", true),
            "ferryrun: job summary: 2 ranks and 2 spawned processes on 2 hosts\n"
            "  rank      host   wall   cpu    peak rss  exit\n"
            "  0         node1  1.0 s  1.0 s  1 MiB     0\n"
            "  1         node2  1.0 s  1.0 s  1 MiB     0\n"
            "  spawn1:0  node1  2.0 s  0.5 s  4 MiB     0\n"
            "  spawn1:1  node2  1.0 s  0.5 s  1 MiB     5\n");
}

TEST(JobSummary, AnyReportedOnlyOnceARankEnded) {
  JobSummary s;
  s.begin({"node1", "node2"});
  EXPECT_FALSE(s.any_reported());  // a launch that failed before its ranks: no table
  s.exited(1, 0, 0, 1'000, 1'000, 512);
  EXPECT_TRUE(s.any_reported());
}

TEST(JobSummary, PerRankNamesSignals) {
  JobSummary s;
  s.begin({"a", "b"});
  s.exited(0, 0, 0, 61'000'000, 0, 512);
  s.exited(1, 0, SIGKILL, 0, 0, uint64_t{3} * 1024 * 1024);
  EXPECT_EQ(s.format("ferryrun", true),
            "ferryrun: job summary: 2 ranks on 2 hosts\n"
            "  rank  host  wall        cpu    peak rss  exit\n"
            "  0     a     1 min 01 s  0.0 s  512 KiB   0\n"
            "  1     b     0.0 s       0.0 s  3.0 GiB   SIGKILL\n");
}

// The rank that called MPI_Abort reads as such, not as the SIGTERM that ended the job's ranks
// after it, nor as its own exit; an abort with code 0 is still not a clean end.
TEST(JobSummary, AnAbortingRankShowsItsAbort) {
  JobSummary s;
  s.begin({"a", "a", "b"});
  s.aborted(1, 7);
  s.aborted(9, 7);  // outside the attempt: ignored
  s.exited(0, 0, SIGTERM, 0, 0, 512);
  s.exited(1, 0, SIGTERM, 0, 0, 512);
  s.exited(2, 7, 0, 0, 0, 512);
  EXPECT_EQ(s.format("ferryrun", false),
            "ferryrun: job summary: 3 ranks on 2 hosts\n"
            "  host  ranks  wall   cpu    peak rss  exit\n"
            "  a     0-1    0.0 s  0.0 s  512 KiB   MPI_Abort 7 (rank 1), SIGTERM (rank 0)\n"
            "  b     2      0.0 s  0.0 s  512 KiB   7 (rank 2)\n");
  JobSummary zero;
  zero.begin({"a"});
  zero.aborted(0, 0);
  zero.exited(0, 0, 0, 0, 0, 512);
  EXPECT_NE(zero.format("ferryrun", false).find("MPI_Abort 0 (rank 0)"), std::string::npos);
}

TEST(JobSummary, DurationsAndSizesReadWell) {
  EXPECT_EQ(format_duration_us(3'723'000'000), "1 h 02 min");
  EXPECT_EQ(format_kib(uint64_t{1536} * 1024), "1.5 GiB");
  JobSummary s;
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.format("ferryrun", false), "");
}

}  // namespace
}  // namespace ferry
