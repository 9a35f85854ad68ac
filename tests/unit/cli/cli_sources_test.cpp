// Where a job's settings come from: the command line over a --config job file, hosts from
// -H / hostfiles / the job file / a Slurm allocation / this machine.

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>

#include "ferry/cli/ferryrun_cli.hpp"

namespace ferry {
namespace {

ParseOutcome parse(std::vector<std::string> args) {
  args.insert(args.begin(), "ferryrun");
  return parse_ferryrun_args(args);
}

// A temporary folder holding files written by the test.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/ferry-cli-test.XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf " + path_).c_str()); }
  std::string write(const std::string& name, const std::string& text) const {
    std::string p = path_ + "/" + name;
    std::ofstream(p) << text;
    return p;
  }

 private:
  std::string path_;
};

// Slurm variables set for one test, removed afterwards.
class SlurmEnv {
 public:
  SlurmEnv(const char* nodes, const char* tasks) {
    ::setenv("SLURM_JOB_NODELIST", nodes, 1);
    if (tasks) ::setenv("SLURM_TASKS_PER_NODE", tasks, 1);
  }
  ~SlurmEnv() {
    ::unsetenv("SLURM_JOB_NODELIST");
    ::unsetenv("SLURM_TASKS_PER_NODE");
  }
};

const char* const job_toml = R"(
np = 6
command = ["python3", "train.py"]
wdir = "/data"
[defaults]
slots = 3
port = 2200
[[hosts]]
name = "fnode1"
port = 2301
[[hosts]]
name = "fnode2"
port = 2302
[environment]
NCCL_DEBUG = "INFO"
A = "file"
[output]
tag = "openmpi"
[binding]
map_by = "node"
)";

TEST(CliSources, JobFileGivesEverythingTheCommandLineDoesNot) {
  TempDir dir;
  auto r = parse({"--config", dir.write("job.toml", job_toml)});
  ASSERT_TRUE(r.config.has_value());
  const FrontendConfig& c = *r.config;
  EXPECT_EQ(c.job.np, 6);
  EXPECT_EQ(c.job.command, (std::vector<std::string>{"python3", "train.py"}));
  EXPECT_EQ(c.job.wdir, "/data");
  EXPECT_TRUE(c.job.wdir_explicit);
  ASSERT_EQ(c.job.hosts.size(), 2u);
  EXPECT_EQ(c.job.hosts[0].port, 2301);
  EXPECT_EQ(c.job.hosts[1].slots, 3);
  EXPECT_EQ(c.ssh.port, 2200);
  EXPECT_EQ(c.output.tag, TagStyle::kOpenMpi);
  EXPECT_EQ(c.job.placement.mapping, HostMapping::kByNode);
  EXPECT_EQ(c.job.exports, (std::vector<std::string>{"NCCL_DEBUG=INFO", "A=file"}));
}

TEST(CliSources, TheCommandLineWins) {
  TempDir dir;
  auto r =
      parse({"--config", dir.write("job.toml", job_toml), "-np", "2", "-H", "x:2", "-p", "22", "-x",
             "A=cli", "--tag-style", "none", "--map-by", "slot", "--wdir", "/w", "hostname"});
  ASSERT_TRUE(r.config.has_value());
  const FrontendConfig& c = *r.config;
  EXPECT_EQ(c.job.np, 2);
  EXPECT_EQ(c.job.command, (std::vector<std::string>{"hostname"}));
  ASSERT_EQ(c.job.hosts.size(), 1u);  // -H replaces the file's hosts
  EXPECT_EQ(c.job.hosts[0].name, "x");
  EXPECT_EQ(c.ssh.port, 22);
  EXPECT_EQ(c.job.wdir, "/w");
  EXPECT_EQ(c.output.tag, TagStyle::kNone);
  EXPECT_EQ(c.job.placement.mapping, HostMapping::kBySlot);
  // The -x value wins over the file's, and each variable is there once.
  EXPECT_EQ(c.job.exports, (std::vector<std::string>{"NCCL_DEBUG=INFO", "A=cli"}));
}

TEST(CliSources, CommandLineDevicesReplaceThePerHostOnes) {
  TempDir dir;
  const std::string file = dir.write("job.toml",
                                     "[defaults]\ndevices = [5]\n"
                                     "[[hosts]]\nname = \"a\"\ndevices = [0, 1]\n"
                                     "[[hosts]]\nname = \"b\"\n");
  auto kept = parse({"--config", file, "true"});
  ASSERT_TRUE(kept.config.has_value());
  EXPECT_EQ(kept.config->job.binding.devices, (std::vector<int>{5}));
  ASSERT_EQ(kept.config->job.host_devices.size(), 1u);
  EXPECT_EQ(kept.config->job.host_devices[0].devices, (std::vector<int>{0, 1}));
  // --devices is the same setting for every host, and the command line wins.
  auto cli = parse({"--config", file, "--devices", "3", "true"});
  ASSERT_TRUE(cli.config.has_value());
  EXPECT_EQ(cli.config->job.binding.devices, (std::vector<int>{3}));
  EXPECT_TRUE(cli.config->job.host_devices.empty());
}

TEST(CliSources, DefaultSlotsApplyToCommandLineHostsToo) {
  TempDir dir;
  auto r =
      parse({"--config", dir.write("job.toml", "[defaults]\nslots = 4\n"), "-H", "a,b:1", "true"});
  ASSERT_TRUE(r.config.has_value());
  EXPECT_EQ(r.config->job.hosts[0].slots, 4);
  EXPECT_EQ(r.config->job.hosts[1].slots, 1);
  auto d = parse({"--default-slots", "8", "-H", "a", "true"});
  ASSERT_TRUE(d.config.has_value());
  EXPECT_EQ(d.config->job.hosts[0].slots, 8);
}

TEST(CliSources, JobFileHostfileIsReadBesideIt) {
  TempDir dir;
  dir.write("hosts.txt", "# MPICH style\nh1:2\nh2 slots=2 port=2302\n");
  auto r = parse({"--config", dir.write("job.toml", "hostfile = \"hosts.txt\"\n"), "true"});
  ASSERT_TRUE(r.config.has_value()) << r.exit_code;
  ASSERT_EQ(r.config->job.hosts.size(), 2u);
  EXPECT_EQ(r.config->job.hosts[1].port, 2302);
}

TEST(CliSources, BadJobFileIsOneLineAndExitTwo) {
  TempDir dir;
  testing::internal::CaptureStderr();
  std::string path = dir.write("job.toml", "np = 2\n[output]\ntags = \"x\"\n");
  auto r = parse({"--config", path, "true"});
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(err, "ferryrun: " + path +
                     ":3: unknown key 'tags' in [output] (known: tag, timestamps, merge_stderr, "
                     "dir, layout, console_ranks, fold, summary)\n");
  EXPECT_EQ(parse({"--config", "/nonexistent.toml", "true"}).exit_code, 2);
  EXPECT_EQ(parse({"--config", dir.write("j.yaml", "np: 2\n"), "true"}).exit_code, 2);
}

TEST(CliSources, SlurmAllocationWhenNoHostsAreGiven) {
  SlurmEnv slurm("fnode[1-3]", "2(x2),1");
  auto r = parse({"hostname"});
  ASSERT_TRUE(r.config.has_value());
  const HostList& h = r.config->job.hosts;
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[0].name, "fnode1");
  EXPECT_EQ(h[0].slots, 2);
  EXPECT_EQ(h[2].name, "fnode3");
  EXPECT_EQ(h[2].slots, 1);
  // An explicit host option wins over the allocation.
  auto explicit_hosts = parse({"-H", "a", "hostname"});
  ASSERT_TRUE(explicit_hosts.config.has_value());
  EXPECT_EQ(explicit_hosts.config->job.hosts[0].name, "a");
}

TEST(CliSources, SlurmWorksInEveryPersonality) {
  SlurmEnv slurm("node[01-02]", "4(x2)");
  for (const char* argv0 : {"mpirun", "horovodrun"}) {
    auto r = parse_ferryrun_args({argv0, "-np", "8", "true"});
    ASSERT_TRUE(r.config.has_value()) << argv0;
    ASSERT_EQ(r.config->job.hosts.size(), 2u) << argv0;
    EXPECT_EQ(r.config->job.hosts[1].name, "node02") << argv0;
    EXPECT_EQ(r.config->job.hosts[1].slots, 4) << argv0;
  }
}

TEST(CliSources, BadSlurmVariablesAreOneLine) {
  SlurmEnv slurm("node[3-1]", nullptr);
  testing::internal::CaptureStderr();
  auto r = parse({"true"});
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(err.starts_with("ferryrun: SLURM_JOB_NODELIST: ")) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

TEST(CliSources, PeersHostFormatsThroughTheCommandLine) {
  TempDir dir;
  // Open MPI's own man-page hostfile, Horovod's and DeepSpeed's `host slots=N`, hydra's
  // `host:N`, and ferry's per-host port=.
  std::string ompi = dir.write("ompi",
                               "# This is an example hostfile.\nfoo.example.com\n"
                               "bar.example.com slots=2\nyow.example.com slots=4 "
                               "max-slots=4\n");
  std::string hvd = dir.write("hvd", "worker-0 slots=4\nworker-1 slots=4\n");
  std::string hydra = dir.write("hydra", "host1:2\nhost2:3\n");
  std::string ports =
      dir.write("ports", "10.0.0.5 slots=1 port=2201\n10.0.0.5 slots=1 port=2202\n");
  auto r = parse({"--hostfile", ompi, "-hostfile", hvd, "--machinefile", hydra, "--hostfile", ports,
                  "-H", "user@gpu9:2, [fe80::1]:2,a,a", "true"});
  ASSERT_TRUE(r.config.has_value());
  const HostList& h = r.config->job.hosts;
  ASSERT_EQ(h.size(), 12u);
  EXPECT_EQ(h[0].name, "gpu9");
  EXPECT_EQ(h[0].user, "user");
  EXPECT_EQ(h[1].name, "fe80::1");
  EXPECT_EQ(h[2].slots, 2);  // -H a,a
  EXPECT_EQ(h[5].max_slots, 4);
  EXPECT_EQ(h[9].slots, 3);
  EXPECT_EQ(h[10].port, 2201);
  EXPECT_EQ(h[11].port, 2202);
}

TEST(CliSources, ThisMachineWhenNothingNamesHosts) {
  auto r = parse({"-N", "3", "true"});
  ASSERT_TRUE(r.config.has_value());
  EXPECT_EQ(r.config->job.hosts[0].name, "localhost");
  EXPECT_EQ(r.config->job.hosts[0].slots, 3);
}

}  // namespace
}  // namespace ferry
