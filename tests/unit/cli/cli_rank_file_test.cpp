// --rankfile through the ferryrun and mpirun personalities: the file read and placed while
// parsing, its hosts the job's when none were given, and what it cannot combine with refused
// in one line.
#include <gtest/gtest.h>

#include "ferry/cli/ferryrun_cli.hpp"
#include "ferryrun_line.hpp"
#include "mpirun_line.hpp"

namespace ferry {
namespace {

using testing_cli::ferryrun;
using testing_cli::temp_file;
using testing_mpirun::mpi;

TEST(CliRankFile, MpirunsRfPlacesTheRanksOnTheGivenHosts) {
  const std::string f = temp_file("rf-given", "rank 0=b slot=0\nrank 1=a slot=1:0\n");
  auto r = mpi({"-H", "a,b", "-rf", f, "./app"});
  ASSERT_TRUE(r.config) << r.exit_code;
  const JobOptions& job = r.config->job;
  EXPECT_EQ(job.np, 2);  // the file's ranks
  ASSERT_TRUE(job.rank_file.has_value());
  EXPECT_EQ(job.rank_file->entries.size(), 2U);
  EXPECT_EQ(job.hosts.size(), 2U);
}

TEST(CliRankFile, WithoutHostsTheFilesHostsAreTheJobs) {
  const std::string f = temp_file("rf-hosts", "rank 0=n2 slot=0\nrank 1=n1\nrank 2=n2 slot=1\n");
  auto r = ferryrun({"--rankfile", f, "./app"});
  ASSERT_TRUE(r.config) << r.exit_code;
  const HostList& hosts = r.config->job.hosts;
  ASSERT_EQ(hosts.size(), 2U);
  EXPECT_EQ(hosts[0].name, "n2");
  EXPECT_EQ(hosts[0].slots, 2);
  EXPECT_EQ(hosts[1].name, "n1");
}

// One line on stderr, exit 2, for `args` + a rank file; returns that line.
std::string refused(std::vector<std::string> args) {
  testing::internal::CaptureStderr();
  auto r = ferryrun(std::move(args));
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(r.exit_code, 2) << err;
  EXPECT_FALSE(r.config);
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  return err;
}

TEST(CliRankFile, BadFilesAndConflictingPlacementsAreOneLine) {
  const std::string f = temp_file("rf-bad", "rank 0=a slot=0\nrank 1=zz slot=0\n");
  EXPECT_EQ(refused({"-H", "a:2", "--rankfile", f, "./app"}),
            "ferryrun: " + f + " line 2: host 'zz' is not one of the job's hosts (a)\n");
  const std::string ok = temp_file("rf-ok", "rank 0=a slot=0\n");
  EXPECT_EQ(refused({"-H", "a", "--rankfile", ok, "--map-by", "node", "./app"}),
            "ferryrun: --rankfile " + ok +
                ": the file places every rank; it does not combine with --map-by\n");
  EXPECT_EQ(
      refused({"-H", "a", "--rankfile", ok, "-N", "1", "./app"}),
      "ferryrun: --rankfile " + ok + ": the file places every rank; it does not combine with -N\n");
  EXPECT_NE(refused({"-H", "a", "--rankfile", ok, "./x", ":", "-np", "1", "./y"})
                .find("it does not combine with MPMD parts"),
            std::string::npos);
  EXPECT_NE(refused({"--rankfile", "/nonexistent/rf", "./app"}).find("/nonexistent/rf"),
            std::string::npos);
}

}  // namespace
}  // namespace ferry
