// ferryrun as a whole, before a job starts: how many ranks it places (which sets the padding
// of per-rank file names), and --stdin checked against the placed ranks.
#include "ferry/app/app.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "ferry/frontend/host_spec.hpp"
#include "hosts/numbered_hosts.hpp"

namespace ferry {
namespace {

// The ranks ferryrun launches for `job`, as it places them (0: the hosts cannot take them).
int ranks_to_launch(const JobOptions& job) {
  auto placed = place_ranks(job.hosts, job.np, job.oversubscribe, job.placement);
  return placed ? placed->world_size : 0;
}

OutputOptions console_for(const FrontendConfig& cfg) {
  auto placed = place_ranks(cfg.job.hosts, cfg.job.np, cfg.job.oversubscribe, cfg.job.placement);
  EXPECT_TRUE(placed.ok());
  return console_options(cfg, placed ? *placed : Placement{});
}

TEST(App, RanksToLaunchFollowThePlacementNotTheSlotTotal) {
  JobOptions job;
  job.hosts = numbered_hosts({16});
  job.np = 3;
  EXPECT_EQ(ranks_to_launch(job), 3);
  job.np = 0;  // one per slot
  EXPECT_EQ(ranks_to_launch(job), 16);

  job.hosts = numbered_hosts({4, 4, 4});
  job.placement.per_host = 1;  // -N 1 / --map-by ppr:1:node, no -np
  EXPECT_EQ(ranks_to_launch(job), 3);
  job.np = 2;  // -N 1 -np 2: the last host gets none
  EXPECT_EQ(ranks_to_launch(job), 2);

  job.placement = {};
  job.placement.mapping = HostMapping::kByNode;
  job.np = 5;
  EXPECT_EQ(ranks_to_launch(job), 5);

  job.np = 13;  // more than the 12 slots, no --oversubscribe: the job reports it
  EXPECT_EQ(ranks_to_launch(job), 0);
}

TEST(App, PerRankFileNamesArePaddedToTheRanksLaunched) {
  FrontendConfig cfg;
  cfg.output.output_dir = "/out";
  cfg.output.layout = FileLayout::kHorovod;
  cfg.job.hosts = numbered_hosts({12, 12});
  cfg.job.placement.per_host = 2;  // 4 ranks on 24 slots: one digit, as horovodrun
  auto opts = console_for(cfg);
  EXPECT_EQ(opts.world_size, 4);
  EXPECT_EQ(rank_file_path(opts, 3, StreamId::kStdout), "/out/rank.3/stdout");

  cfg.job.placement.per_host = 0;
  cfg.job.np = 11;  // ranks 0-10: two digits
  EXPECT_EQ(rank_file_path(console_for(cfg), 3, StreamId::kStderr), "/out/rank.03/stderr");
}

// run_ferryrun's stderr for a job refused before any host is reached (exit status 2).
std::string refusal(const FrontendConfig& cfg) {
  testing::internal::CaptureStderr();
  const int status = run_ferryrun(cfg);
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(status, 2) << err;
  return err;
}

TEST(App, StdinRankBeyondThePlacedRanksIsBadInput) {
  // -N 1 on two hosts of 4 slots runs ranks 0-1; --stdin 3 would silently go nowhere.
  FrontendConfig cfg;
  cfg.program = "mpirun";
  cfg.job.hosts = numbered_hosts({4, 4});
  cfg.job.placement.per_host = 1;
  cfg.job.stdin_rank = 3;
  cfg.job.command = {"true"};
  EXPECT_EQ(refusal(cfg), "mpirun: --stdin 3: there is no such rank (2 ranks, 0-1)\n");

  // -np 4 --stdin 4: the same one check, with -np.
  cfg.job.placement.per_host = 0;
  cfg.job.np = 4;
  cfg.job.stdin_rank = 4;
  EXPECT_EQ(refusal(cfg), "mpirun: --stdin 4: there is no such rank (4 ranks, 0-3)\n");

  // A placement the hosts cannot take is refused here too, in one line.
  cfg.job.np = 9;
  cfg.job.stdin_rank = 0;
  const std::string err = refusal(cfg);
  EXPECT_EQ(0U, err.rfind("mpirun: ", 0)) << err;
  EXPECT_EQ(1, std::count(err.begin(), err.end(), '\n')) << err;
}

TEST(App, DeepSpeedIncludeTranslationReachesEachHost) {
  // `deepspeed --include a:0,1@b:2,3 train.py` as the README translates it: a job file,
  // read as ferryrun reads it, then each placed host's spec as the job builds it.
  char tmpl[] = "/tmp/ferry-app-test.XXXXXX";
  const std::filesystem::path dir = ::mkdtemp(tmpl);
  const std::string file = dir / "job.toml";
  std::ofstream(file) << "[[hosts]]\nname = \"a\"\nslots = 2\ndevices = [0, 1]\n"
                         "[[hosts]]\nname = \"b\"\nslots = 2\ndevices = [2, 3]\n";
  auto parsed = parse_ferryrun_args({"ferryrun", "--config", file, "python", "train.py"});
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(parsed.config.has_value());
  const JobOptions& job = parsed.config->job;
  EXPECT_EQ(ranks_to_launch(job), 4);  // one rank per listed device
  auto placed = place_ranks(job.hosts, job.np, job.oversubscribe, job.placement);
  ASSERT_TRUE(placed.ok());
  std::vector<std::vector<int>> devices;
  for (const HostPlan& plan : placed->hosts)
    devices.push_back(
        make_host_spec(job, *placed, HostInputs{&plan, false, {}}, {}).binding.devices);
  EXPECT_EQ(devices, (std::vector<std::vector<int>>{{0, 1}, {2, 3}}));
}

TEST(App, OneHeartbeatSettingWhereverItIsWritten) {
  // --heartbeat, mpirun's ServerAliveInterval and the job file's [ssh] heartbeat all land in
  // JobOptions::heartbeat_s, which ferryrun watches hosts with and each ferryd gets.
  auto cli = parse_ferryrun_args({"ferryrun", "--heartbeat", "3", "-H", "a", "true"});
  ASSERT_TRUE(cli.config.has_value());
  EXPECT_EQ(cli.config->job.heartbeat_s, 3);
  auto mpirun = parse_ferryrun_args(
      {"mpirun", "--mca", "plm_rsh_args", "-o ServerAliveInterval=2", "-H", "a", "true"});
  ASSERT_TRUE(mpirun.config.has_value());
  EXPECT_EQ(mpirun.config->job.heartbeat_s, 2);
  const JobOptions& job = cli.config->job;
  auto placed = place_ranks(job.hosts, job.np, job.oversubscribe, job.placement);
  ASSERT_TRUE(placed.ok());
  EXPECT_EQ(
      make_host_spec(job, *placed, HostInputs{placed->hosts.data(), false, {}}, {}).heartbeat_ms,
      3000u);
}

}  // namespace
}  // namespace ferry
