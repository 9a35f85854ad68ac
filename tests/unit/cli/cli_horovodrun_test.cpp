// horovodrun personality: argv[0] `horovodrun` or `ferryrun --compat horovodrun`.

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "ferry/cli/ferryrun_cli.hpp"

namespace ferry {
namespace {

ParseOutcome hvd(std::vector<std::string> args) {
  args.insert(args.begin(), "/usr/local/bin/horovodrun");
  return parse_ferryrun_args(args);
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

bool has_name(const std::vector<std::string>& v, const std::string& name) {
  return std::any_of(v.begin(), v.end(),
                     [&](const std::string& kv) { return kv.starts_with(name + "="); });
}

TEST(CliHorovodrun, TheDocsFirstExample) {
  // horovod docs: horovodrun -np 4 -H server1:2,server2:2 python train.py
  auto r = hvd({"-np", "4", "-H", "server1:2,server2:2", "python", "train.py"});
  ASSERT_TRUE(r.config.has_value());
  const FrontendConfig& c = *r.config;
  EXPECT_EQ(c.job.np, 4);
  ASSERT_EQ(c.job.hosts.size(), 2u);
  EXPECT_EQ(c.job.hosts[1].name, "server2");
  EXPECT_EQ(c.job.hosts[1].slots, 2);
  EXPECT_EQ(c.output.tag, TagStyle::kHorovod);
  EXPECT_EQ(c.output.layout, FileLayout::kHorovod);
  EXPECT_EQ(c.job.command, (std::vector<std::string>{"python", "train.py"}));
  EXPECT_TRUE(c.job.horovod);  // its ranks are Horovod's: ferryd checks the host's name
}

TEST(CliHorovodrun, OnlyHorovodrunMarksTheRanksAsHorovods) {
  auto compat = parse_ferryrun_args({"ferryrun", "--compat", "horovodrun", "-np", "1", "true"});
  ASSERT_TRUE(compat.config.has_value());
  EXPECT_TRUE(compat.config->job.horovod);
  auto plain = parse_ferryrun_args({"ferryrun", "-np", "1", "true"});
  ASSERT_TRUE(plain.config.has_value());
  EXPECT_FALSE(plain.config->job.horovod);
  auto mpi = parse_ferryrun_args({"mpirun", "-np", "1", "true"});
  ASSERT_TRUE(mpi.config.has_value());
  EXPECT_FALSE(mpi.config->job.horovod);
}

TEST(CliHorovodrun, SshOutputAndStartFlags) {
  auto r = hvd({"--num-proc", "2", "-hostfile", FERRY_SOURCE_DIR "/hostfiles/two-nodes.txt", "-p",
                "12345", "-i", "/id", "--start-timeout", "90", "--verbose", "--output-filename",
                "/tmp/out", "--prefix-output-with-timestamp", "--disable-cache", "--gloo", "true"});
  ASSERT_TRUE(r.config.has_value());
  const FrontendConfig& c = *r.config;
  EXPECT_EQ(c.job.np, 2);
  EXPECT_EQ(c.job.hosts.size(), 2u);
  EXPECT_EQ(c.ssh.port, 12345);
  EXPECT_EQ(c.ssh.identity_file, "/id");
  EXPECT_EQ(c.job.start_timeout_s, 90);
  EXPECT_TRUE(c.job.verbose);
  EXPECT_EQ(c.output.output_dir, "/tmp/out");
  EXPECT_TRUE(c.output.timestamps);
}

TEST(CliHorovodrun, TunablesBecomeHorovodVariables) {
  auto r = hvd({"-np",
                "1",
                "--fusion-threshold-mb",
                "32",
                "--cycle-time-ms",
                "2.5",
                "--cache-capacity",
                "2048",
                "--hierarchical-allreduce",
                "--no-hierarchical-allgather",
                "--torus-allreduce",
                "--timeline-filename",
                "/tmp/tl.json",
                "--timeline-mark-cycles",
                "--autotune",
                "--autotune-log-file",
                "/tmp/at.csv",
                "--autotune-warmup-samples",
                "5",
                "--autotune-steps-per-sample",
                "20",
                "--autotune-bayes-opt-max-samples",
                "30",
                "--autotune-gaussian-process-noise",
                "0.7",
                "--no-stall-check",
                "--stall-check-warning-time-seconds",
                "120",
                "--stall-check-shutdown-time-seconds",
                "600",
                "--gloo-timeout-seconds",
                "60",
                "--log-level",
                "debug",
                "--log-without-timestamp",
                "--mpi-threads-disable",
                "--num-nccl-streams",
                "2",
                "--tcp",
                "true"});
  ASSERT_TRUE(r.config.has_value());
  const auto& e = r.config->job.exports;
  for (const char* kv : {"HOROVOD_FUSION_THRESHOLD=33554432",
                         "HOROVOD_CYCLE_TIME=2.5",
                         "HOROVOD_CACHE_CAPACITY=2048",
                         "HOROVOD_HIERARCHICAL_ALLREDUCE=1",
                         "HOROVOD_HIERARCHICAL_ALLGATHER=0",
                         "HOROVOD_TORUS_ALLREDUCE=1",
                         "HOROVOD_TIMELINE=/tmp/tl.json",
                         "HOROVOD_TIMELINE_MARK_CYCLES=1",
                         "HOROVOD_AUTOTUNE=1",
                         "HOROVOD_AUTOTUNE_LOG=/tmp/at.csv",
                         "HOROVOD_AUTOTUNE_WARMUP_SAMPLES=5",
                         "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE=20",
                         "HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES=30",
                         "HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE=0.7",
                         "HOROVOD_STALL_CHECK_DISABLE=1",
                         "HOROVOD_STALL_CHECK_TIME_SECONDS=120",
                         "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS=600",
                         "HOROVOD_GLOO_TIMEOUT_SECONDS=60",
                         "HOROVOD_LOG_LEVEL=DEBUG",
                         "HOROVOD_LOG_HIDE_TIME=1",
                         "HOROVOD_MPI_THREADS_DISABLE=1",
                         "HOROVOD_NUM_NCCL_STREAMS=2",
                         "NCCL_IB_DISABLE=1"})
    EXPECT_TRUE(has(e, kv)) << kv;
}

TEST(CliHorovodrun, SwitchedOffTunablesAndSubFlagsWithoutTheirSwitch) {
  auto r = hvd({"-np", "1", "--no-autotune", "--autotune-warmup-samples", "5", "--stall-check",
                "--timeline-mark-cycles", "true"});
  ASSERT_TRUE(r.config.has_value());
  const auto& e = r.config->job.exports;
  EXPECT_FALSE(has_name(e, "HOROVOD_AUTOTUNE"));
  EXPECT_FALSE(has_name(e, "HOROVOD_AUTOTUNE_WARMUP_SAMPLES"));
  EXPECT_FALSE(has_name(e, "HOROVOD_TIMELINE_MARK_CYCLES"));
  EXPECT_TRUE(has(e, "HOROVOD_STALL_CHECK_DISABLE=0"));
  EXPECT_FALSE(has_name(e, "NCCL_IB_DISABLE"));
}

TEST(CliHorovodrun, BadTunableValuesNameTheFlag) {
  EXPECT_EQ(hvd({"-np", "1", "--fusion-threshold-mb", "-3", "true"}).exit_code, 2);
  EXPECT_EQ(
      hvd({"-np", "1", "--autotune", "--autotune-gaussian-process-noise", "1.5", "true"}).exit_code,
      2);
  EXPECT_EQ(hvd({"-np", "1", "--log-level", "LOUD", "true"}).exit_code, 2);
  EXPECT_EQ(hvd({"-np", "1", "--cycle-time-ms", "fast", "true"}).exit_code, 2);
}

TEST(CliHorovodrun, NetworkInterfacesAsHorovodSetsThem) {
  auto r =
      hvd({"-np", "1", "--network-interfaces", "eth0,eth1", "--network-interface", "ib0", "true"});
  ASSERT_TRUE(r.config.has_value());
  EXPECT_EQ(r.config->job.network_interfaces, (std::vector<std::string>{"eth0", "eth1", "ib0"}));
  EXPECT_TRUE(has(r.config->job.exports, "HOROVOD_GLOO_IFACE=eth0"));
  EXPECT_TRUE(has(r.config->job.exports, "NCCL_SOCKET_IFNAME=eth0,eth1,ib0"));
}

TEST(CliHorovodrun, ForwardsTheLaunchersEnvironmentButNotTheSession) {
  ::setenv("FERRY_TEST_FORWARD_ME", "yes", 1);
  ::setenv("SSH_CONNECTION", "1.2.3.4 5 6.7.8.9 22", 1);
  ::setenv("CUDA_VISIBLE_DEVICES", "0", 1);
  ::setenv("HOROVOD_FUSION_THRESHOLD", "1", 1);
  auto r = hvd({"-np", "1", "--fusion-threshold-mb", "2", "true"});
  ::unsetenv("SSH_CONNECTION");
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  ::unsetenv("HOROVOD_FUSION_THRESHOLD");
  ASSERT_TRUE(r.config.has_value());
  const auto& e = r.config->job.exports;
  EXPECT_FALSE(has_name(e, "FERRY_TEST_FORWARD_ME"));  // FERRY_* are ferry's own
  EXPECT_TRUE(has_name(e, "PATH"));
  EXPECT_FALSE(has_name(e, "SSH_CONNECTION"));
  EXPECT_FALSE(has_name(e, "CUDA_VISIBLE_DEVICES"));
  EXPECT_FALSE(has_name(e, "HOME"));
  // The flag wins over the launcher's variable, and each variable is exported once.
  EXPECT_TRUE(has(e, "HOROVOD_FUSION_THRESHOLD=2097152"));
  EXPECT_EQ(std::count_if(
                e.begin(), e.end(),
                [](const std::string& kv) { return kv.starts_with("HOROVOD_FUSION_THRESHOLD="); }),
            1);
  ::unsetenv("FERRY_TEST_FORWARD_ME");
}

TEST(CliHorovodrun, StartTimeoutFromTheEnvironmentUnlessGiven) {
  ::setenv("HOROVOD_START_TIMEOUT", "77", 1);
  auto a = hvd({"-np", "1", "true"});
  auto b = hvd({"-np", "1", "--start-timeout", "5", "true"});
  ::unsetenv("HOROVOD_START_TIMEOUT");
  ASSERT_TRUE(a.config && b.config);
  EXPECT_EQ(a.config->job.start_timeout_s, 77);
  EXPECT_EQ(b.config->job.start_timeout_s, 5);
}

// --min-np without a discovery script: Horovod's elastic mode over the fixed hosts (horovod's
// launch.py: --min-np makes a run elastic; FixedHosts finds the same hosts every time). Every slot
// gets a worker, up to --max-np; it needs 2 hosts or more.
TEST(CliHorovodrun, MinNpWithFixedHostsIsTheElasticMode) {
  auto r = hvd({"-np", "2", "-H", "a:2,b:2", "--min-np", "2", "--blacklist-cooldown-range", "3",
                "9", "python", "t.py"});
  ASSERT_TRUE(r.config.has_value());
  const JobOptions& job = r.config->job;
  EXPECT_TRUE(job.elastic.on());
  EXPECT_TRUE(job.elastic.fixed_hosts);
  EXPECT_EQ(job.elastic.min_np, 2);
  EXPECT_EQ(job.elastic.cooldown_low_s, 3);
  EXPECT_EQ(job.np, 4) << "a worker on every slot";
  EXPECT_EQ(job.min_ranks, 0) << "the elastic driver, not the restart policy";
  ASSERT_EQ(job.hosts.size(), 2u);
  auto capped = hvd({"-np", "4", "-H", "a:2,b:2,c:2", "--min-np", "2", "--max-np", "4", "t.py"});
  ASSERT_TRUE(capped.config.has_value());
  EXPECT_EQ(capped.config->job.np, 4);
  EXPECT_EQ(capped.config->job.elastic.max_np, 4);
  // --max-np alone is not elastic (horovod's _is_elastic), and no flag is elastic without it.
  auto plain = hvd({"-np", "4", "-H", "a:2,b:2", "--max-np", "4", "t.py"});
  ASSERT_TRUE(plain.config.has_value());
  EXPECT_FALSE(plain.config->job.elastic.on());

  testing::internal::CaptureStderr();
  EXPECT_EQ(hvd({"-np", "2", "-H", "a:4", "--min-np", "2", "t.py"}).exit_code, 2);
  EXPECT_EQ(hvd({"-np", "6", "-H", "a:2,b:2", "--min-np", "2", "t.py"}).exit_code, 2);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("needs at least 2 hosts; the job has 1 (a)"), std::string::npos) << err;
  EXPECT_NE(err.find("the hosts have 4 slots, fewer than 6"), std::string::npos) << err;
}

// Whole-job restarts and Horovod's elastic mode are two answers to one failure: the elastic
// driver keeps the survivors and resets them, a restart would kill them. Both at once is refused.
TEST(CliHorovodrun, MaxRestartsWithTheElasticModeIsRefused) {
  testing::internal::CaptureStderr();
  auto r = hvd({"-np", "2", "-H", "a:2,b:2", "--min-np", "2", "--max-restarts", "3", "t.py"});
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(err,
            "horovodrun: --max-restarts 3: Horovod's elastic mode (--min-np, "
            "--host-discovery-script) recovers from failures itself; whole-job restarts do not "
            "combine with it\n");
  EXPECT_TRUE(hvd({"-np", "2", "-H", "a:2,b:2", "--max-restarts", "3", "t.py"}).config);

  // So is --min-hosts: going on without a lost host is the elastic driver's own choice.
  testing::internal::CaptureStderr();
  auto m = hvd({"-np", "2", "-H", "a:2,b:2", "--min-np", "2", "--min-hosts", "1", "t.py"});
  EXPECT_EQ(m.exit_code, 2);
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "horovodrun: --min-hosts 1: Horovod's elastic mode (--min-np, "
            "--host-discovery-script) decides itself which hosts go on; give --min-np instead\n");
  EXPECT_TRUE(hvd({"-np", "2", "-H", "a:2,b:2", "--min-hosts", "1", "t.py"}).config);
}

// --host-discovery-script: the elastic mode. The command line only says that hosts are to be
// found: the script first runs when the job starts (elastic_discovery_test), so -np stays what
// was given and no host is made up; the launcher follows the hosts then.
TEST(CliHorovodrun, HostDiscoveryScriptLeavesTheHostsToTheJob) {
  auto r =
      hvd({"-np", "2", "--host-discovery-script", "/nonexistent/discover.sh", "--slots-per-host",
           "3", "--reset-limit", "4", "--blacklist-cooldown-range", "5", "60", "python", "t.py"});
  ASSERT_TRUE(r.config.has_value());
  const JobOptions& job = r.config->job;
  EXPECT_TRUE(job.hosts.empty());
  EXPECT_EQ(job.np, 2);
  EXPECT_EQ(job.min_ranks, 0);
  EXPECT_EQ(job.elastic.discovery_script, "/nonexistent/discover.sh");
  EXPECT_EQ(job.elastic.slots_per_host, 3);
  EXPECT_EQ(job.elastic.min_np, 2);
  EXPECT_EQ(job.elastic.reset_limit, 4);
  EXPECT_EQ(job.elastic.cooldown_low_s, 5);
  EXPECT_EQ(job.elastic.timeout_s, 600);
  EXPECT_TRUE(r.config->launch_by_hosts);
  auto capped = hvd({"-np", "2", "--min-np", "1", "--max-np", "3", "--host-discovery-script",
                     "d.sh", "python", "t.py"});
  ASSERT_TRUE(capped.config.has_value());
  EXPECT_EQ(capped.config->job.elastic.min_np, 1);
  EXPECT_EQ(capped.config->job.elastic.max_np, 3);
  EXPECT_EQ(hvd({"--host-discovery-script", "d.sh", "-H", "a:2", "t.py"}).exit_code, 2);
  EXPECT_EQ(hvd({"--host-discovery-script", "d.sh", "--blacklist-cooldown-range", "0", "5", "t.py"})
                .exit_code,
            2);
}

TEST(CliHorovodrun, RefusedFlagsExitTwo) {
  for (auto args : std::vector<std::vector<std::string>>{
           {"-np", "2", "--config-file", "hvd.yaml", "python", "t.py"},
           {"-np", "2", "--reset-limit", "3", "python", "t.py"},  // needs a discovery script
           {"-np", "2", "--min-np", "3", "python", "t.py"},       // above -np
           {"-np", "4", "--max-np", "3", "python", "t.py"},       // below -np
           {"-np", "2", "--jsrun", "python", "t.py"},
           {"-np", "2", "--mpi-args=--map-by ppr:6:node", "python", "t.py"},
           {"-cb"},
           {"--blacklist-cooldown-range", "10", "100", "-np", "2", "x"}}) {  // same
    auto r = hvd(args);
    EXPECT_EQ(r.exit_code, 2) << args.front() << " " << args.back();
    EXPECT_FALSE(r.config.has_value());
  }
  testing::internal::CaptureStderr();
  hvd({"-np", "2", "--config-file", "hvd.yaml", "python", "t.py"});
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(err,
            "horovodrun: --config-file: Horovod's YAML config files are not read by ferry; put "
            "the settings in a TOML job file and pass --config job.toml (see "
            "docs/job-file.md)\n");
}

TEST(CliHorovodrun, CompatFlagSelectsThePersonality) {
  auto r = parse_ferryrun_args(
      {"ferryrun", "--compat", "horovodrun", "-np", "2", "--fusion-threshold-mb", "1", "true"});
  ASSERT_TRUE(r.config.has_value());
  EXPECT_TRUE(has(r.config->job.exports, "HOROVOD_FUSION_THRESHOLD=1048576"));
  auto eq = parse_ferryrun_args({"ferryrun", "--compat=horovodrun", "-np", "2", "true"});
  EXPECT_TRUE(eq.config.has_value());
  EXPECT_EQ(parse_ferryrun_args({"ferryrun", "--compat", "srun", "true"}).exit_code, 2);
  // A horovodrun flag is unknown to plain ferryrun.
  EXPECT_EQ(parse_ferryrun_args({"ferryrun", "--fusion-threshold-mb", "1", "true"}).exit_code, 2);
  EXPECT_EQ(parse_ferryrun_args({"ferryrun", "-np", "1", "--compat", "mpirun", "true"}).exit_code,
            2);
}

TEST(CliHorovodrun, VersionIsLowerCaseV) {
  testing::internal::CaptureStdout();
  auto r = hvd({"-v"});
  std::string out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_FALSE(r.config.has_value());
  EXPECT_NE(out.find("horovodrun personality"), std::string::npos) << out;
}

TEST(CliHorovodrun, HelpNamesThePersonalityAndShowsNoFlagValues) {
  testing::internal::CaptureStdout();
  auto r = hvd({"--help"});
  std::string out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(out.find("\nUsage: horovodrun [OPTIONS] [--] COMMAND [ARGS...]\n"), std::string::npos)
      << out;
  // CLI11 would write the negation as "--no-autotune{false}", which reads like a default.
  EXPECT_NE(out.find("--autotune,--no-autotune "), std::string::npos) << out;
  EXPECT_EQ(out.find("{false}"), std::string::npos) << out;

  testing::internal::CaptureStdout();
  parse_ferryrun_args({"ferryrun", "--compat", "horovodrun", "--help"});
  out = testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("\nUsage: ferryrun --compat horovodrun [OPTIONS]"), std::string::npos) << out;
}

}  // namespace
}  // namespace ferry
