// MPICH's mpiexec (hydra) line through the mpirun personality's links: its flags, taken,
// accepted with no effect, or refused with the reason.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "ferry/cli/ferryrun_cli.hpp"
#include "mpirun_line.hpp"

namespace ferry {
namespace {

using testing_mpirun::has;
using testing_mpirun::mpi;

// MPICH's mpiexec (hydra) line through the same links.
TEST(CliMpirunHydra, HydraFlagsMeanWhatMpichMeans) {
  ::setenv("FERRY_TEST_HYDRA_A", "a", 1);
  auto r = mpi({"-f",        FERRY_SOURCE_DIR "/hostfiles/two-nodes.txt",
                "-n",        "4",
                "-ppn",      "2",
                "-genv",     "G",
                "1",         "-env",
                "E",         "2",
                "-genvlist", "FERRY_TEST_HYDRA_A",
                "-iface",    "ib0",
                "-l",        "-gpus-per-proc",
                "1",         "./app"},
               "mpiexec");
  ::unsetenv("FERRY_TEST_HYDRA_A");
  ASSERT_TRUE(r.config.has_value());
  const JobOptions& job = r.config->job;
  EXPECT_EQ(job.hosts.size(), 2u);
  EXPECT_EQ(job.np, 4);
  EXPECT_EQ(job.placement.per_host, 2);
  EXPECT_TRUE(has(job.exports, "G=1"));
  EXPECT_TRUE(has(job.exports, "E=2"));
  EXPECT_TRUE(has(job.exports, "FERRY_TEST_HYDRA_A=a"));
  EXPECT_EQ(job.network_interfaces, (std::vector<std::string>{"=ib0"}));
  EXPECT_EQ(r.config->output.tag, TagStyle::kMpich);
  EXPECT_EQ(job.binding.devices_per_rank, 1);
  EXPECT_EQ(job.command, (std::vector<std::string>{"./app"}));

  auto h = mpi({"-hosts", "a:2,b:2", "-prepend-rank", "-bootstrap", "ssh", "true"});
  ASSERT_TRUE(h.config.has_value());
  EXPECT_EQ(h.config->job.hosts.size(), 2u);
  EXPECT_EQ(h.config->output.tag, TagStyle::kMpich);
  EXPECT_EQ(h.config->launch, LaunchWith::kSsh);
  EXPECT_EQ(mpi({"-gpus-per-proc", "auto", "true"}).config->job.binding.devices_per_rank, -1);
  // -rr: round-robin over the hosts; -print-rank-map: the map before the ranks start.
  auto rr = mpi({"-hosts", "a:2,b:2", "-n", "4", "-rr", "-print-rank-map", "true"}, "mpiexec");
  ASSERT_TRUE(rr.config.has_value());
  EXPECT_EQ(rr.config->job.placement.mapping, HostMapping::kByNode);
  EXPECT_TRUE(rr.config->job.binding.report_bindings);
  EXPECT_EQ(mpi({"-gpus-per-proc", "two", "true"}).exit_code, 2);
}

TEST(CliMpirunHydra, AllOfThisEnvironmentOnlyWhenAsked) {
  ::setenv("HYDRATEST_ALL", "x", 1);
  auto plain = mpi({"true"}, "mpiexec");
  auto all = mpi({"-genvall", "true"}, "mpiexec");
  ::unsetenv("HYDRATEST_ALL");
  ASSERT_TRUE(plain.config.has_value());
  ASSERT_TRUE(all.config.has_value());
  EXPECT_FALSE(has(plain.config->job.exports, "HYDRATEST_ALL=x"));
  EXPECT_TRUE(has(all.config->job.exports, "HYDRATEST_ALL=x"));
}

TEST(CliMpirunHydra, HydraFlagsFerryCannotHonourAreRefusedAndTheRestAccepted) {
  testing::internal::CaptureStderr();
  auto r = mpi({"-n", "2", "-outfile-pattern", "out.%r", "./app"}, "mpiexec");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "mpiexec: -outfile-pattern: --output-filename DIR writes each rank's stdout and "
            "stderr under DIR\n");
  for (const std::vector<std::string>& flag :
       std::vector<std::vector<std::string>>{{"-launcher-exec", "x"},
                                             {"-membind", "core"},
                                             {"-info"},
                                             {"-prepend-pattern", "x"},
                                             {"-errfile-pattern", "x"},
                                             {"-nameserver", "h:1"},
                                             {"-disable-auto-cleanup"},
                                             {"-order-nodes", "ascending"},
                                             {"-skip-launch-node"}}) {
    std::vector<std::string> line = flag;
    line.insert(line.end(), {"-n", "1", "./app"});
    testing::internal::CaptureStderr();
    auto out = mpi(line, "mpiexec");
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(out.exit_code, 2) << flag[0];
    EXPECT_TRUE(err.starts_with("mpiexec: " + flag[0] + ": ")) << err;
  }
  for (const std::vector<std::string>& flag :
       std::vector<std::vector<std::string>>{{"-genvnone"},
                                             {"-envnone"},
                                             {"-rmk", "slurm"},
                                             {"-topolib", "hwloc"},
                                             {"-demux", "poll"},
                                             {"-profile"},
                                             {"-print-all-exitcodes"},
                                             {"-disable-hostname-propagation"},
                                             {"-localhost", "h"},
                                             {"-usize", "SYSTEM"},
                                             {"-pmi-port"},
                                             {"-disable-x"},
                                             {"-silent-abort"}}) {
    std::vector<std::string> line = flag;
    line.insert(line.end(), {"-n", "1", "./app"});
    auto out = mpi(line, "mpiexec");
    ASSERT_TRUE(out.config.has_value()) << flag[0];
    EXPECT_EQ(out.config->job.command, (std::vector<std::string>{"./app"})) << flag[0];
  }
}

}  // namespace
}  // namespace ferry
