#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>

#include "ferry/cli/ferryrun_cli.hpp"
#include "ferry/cli/personality.hpp"

namespace ferry {
namespace {

ParseOutcome parse(std::vector<std::string> args) {
  args.insert(args.begin(), "ferryrun");
  return parse_ferryrun_args(args);
}

TEST(Cli, MpirunStyleSingleDashOptionsAndTheCommand) {
  auto r = parse({"-np", "8", "-H", "a:4,b:4", "-p", "2222", "python", "train.py", "-np", "3"});
  ASSERT_TRUE(r.config.has_value());
  EXPECT_EQ(r.config->job.np, 8);
  ASSERT_EQ(r.config->job.hosts.size(), 2u);
  EXPECT_EQ(r.config->job.hosts[1].name, "b");
  EXPECT_EQ(r.config->ssh.port, 2222);
  // Everything from the first non-option word is the command, its own -np included.
  EXPECT_EQ(r.config->job.command, (std::vector<std::string>{"python", "train.py", "-np", "3"}));
}

TEST(Cli, FlagsBeforeValueOptionsDoNotSwallowThem) {
  auto r = parse({"--verbose", "-np", "2", "--oversubscribe", "-x", "A=1", "-x", "B=2", "--",
                  "echo", "--verbose"});
  ASSERT_TRUE(r.config.has_value());
  EXPECT_TRUE(r.config->job.verbose);
  EXPECT_TRUE(r.config->job.oversubscribe);
  EXPECT_EQ(r.config->job.np, 2);
  EXPECT_EQ(r.config->job.exports, (std::vector<std::string>{"A=1", "B=2"}));
  EXPECT_EQ(r.config->job.command, (std::vector<std::string>{"echo", "--verbose"}));
}

TEST(Cli, DefaultsToThisMachineWithSlotsForTheRanksAsked) {
  auto r = parse({"-n", "6", "true"});
  ASSERT_TRUE(r.config.has_value());
  ASSERT_EQ(r.config->job.hosts.size(), 1u);
  EXPECT_EQ(r.config->job.hosts[0].name, "localhost");
  EXPECT_EQ(r.config->job.hosts[0].slots, 6);
  EXPECT_FALSE(r.config->job.wdir.empty());
  EXPECT_FALSE(r.config->job.wdir_explicit);
  EXPECT_NE(r.config->job.ferryd_path.find("/ferryd"), std::string::npos);
  EXPECT_EQ(r.config->job.stdin_rank, 0);
}

TEST(Cli, OptionsOfTheIssue) {
  auto r =
      parse({"-n", "2", "--hostfile", FERRY_SOURCE_DIR "/hostfiles/two-nodes.txt", "-i", "/k",
             "--start-timeout", "7", "--wdir", "/tmp", "--kill-grace", "1.5", "--ssh-config",
             "/dev/null", "--ssh-accept-new", "--ferryd", "/opt/ferryd", "--stdin-none", "cmd"});
  ASSERT_TRUE(r.config.has_value());
  EXPECT_EQ(r.config->ssh.identity_file, "/k");
  EXPECT_EQ(r.config->job.start_timeout_s, 7);
  EXPECT_EQ(r.config->job.wdir, "/tmp");
  EXPECT_TRUE(r.config->job.wdir_explicit);
  EXPECT_DOUBLE_EQ(r.config->job.kill_grace_s, 1.5);
  EXPECT_EQ(r.config->ssh.config_file, "/dev/null");
  EXPECT_TRUE(r.config->ssh.accept_new);
  EXPECT_EQ(r.config->job.ferryd_path, "/opt/ferryd");
  EXPECT_EQ(r.config->job.stdin_rank, -1);
  EXPECT_FALSE(r.config->job.hosts.empty());
}

TEST(Cli, BadInputExitsTwo) {
  EXPECT_EQ(parse({"-np", "x", "true"}).exit_code, 2);
  EXPECT_EQ(parse({"-np", "2"}).exit_code, 2);  // no command
  EXPECT_EQ(parse({"-H", "a:zero", "true"}).exit_code, 2);
  EXPECT_EQ(parse({"--hostfile", "/nonexistent/hosts", "true"}).exit_code, 2);
  EXPECT_EQ(parse({"-x", "9=1", "true"}).exit_code, 2);
  EXPECT_EQ(parse({"--no-such-flag", "true"}).exit_code, 2);
  EXPECT_FALSE(parse({"-np", "x", "true"}).config.has_value());
}

// torchrun's names for the same things: --max_restarts, PET_MAX_RESTARTS, --nnodes MIN:MAX.
TEST(Cli, FaultToleranceOptions) {
  auto r = parse({"-H", "a,b,c,d", "--max-restarts", "3", "--min-hosts", "3", "true"});
  ASSERT_TRUE(r.config.has_value());
  EXPECT_EQ(r.config->job.max_restarts, 3);
  EXPECT_EQ(r.config->job.min_hosts, 3);
  auto u = parse({"-H", "a,b,c,d", "--max_restarts", "2", "--nnodes", "2:4", "true"});
  ASSERT_TRUE(u.config.has_value());
  EXPECT_EQ(u.config->job.max_restarts, 2);
  EXPECT_EQ(u.config->job.min_hosts, 2);
  // ferryrun's --min-np: the same floor in ranks (horovodrun's --min-np is Horovod's elastic mode).
  auto ranks = parse({"-H", "a:2,b:2", "--min-np", "2", "true"});
  ASSERT_TRUE(ranks.config.has_value());
  EXPECT_EQ(ranks.config->job.min_ranks, 2);
  EXPECT_FALSE(ranks.config->job.elastic.on());
  auto exact = parse({"-H", "a,b", "--nnodes", "2", "true"});
  ASSERT_TRUE(exact.config.has_value());
  EXPECT_EQ(exact.config->job.min_hosts, 0) << "N:N hosts: every host is needed";

  ::setenv("PET_MAX_RESTARTS", "4", 1);
  auto e = parse({"true"});
  auto flag_wins = parse({"--max-restarts", "1", "true"});
  ::unsetenv("PET_MAX_RESTARTS");
  ASSERT_TRUE(e.config.has_value());
  EXPECT_EQ(e.config->job.max_restarts, 4);
  ASSERT_TRUE(flag_wins.config.has_value());
  EXPECT_EQ(flag_wins.config->job.max_restarts, 1);
  EXPECT_EQ(parse({"true"}).config->job.max_restarts, 0);

  testing::internal::CaptureStderr();
  EXPECT_EQ(parse({"-H", "a,b", "--min-hosts", "3", "true"}).exit_code, 2);
  EXPECT_EQ(parse({"-H", "a,b,c", "--nnodes", "1:2", "true"}).exit_code, 2);
  EXPECT_EQ(parse({"-H", "a,b", "--nnodes", "3:1", "true"}).exit_code, 2);
  EXPECT_EQ(parse({"--max-restarts", "-1", "true"}).exit_code, 2);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("ferryrun: --min-hosts 3: the job has only 2 host(s)\n"), std::string::npos)
      << err;
  EXPECT_NE(err.find("ferryrun: --nnodes 1:2: the job has 3 host(s)\n"), std::string::npos);
  EXPECT_NE(err.find("--nnodes: bad value '3:1'"), std::string::npos);
}

TEST(Cli, LauncherChoice) {
  ::unsetenv("SLURM_JOB_ID");
  auto a = parse({"-H", "a,b", "true"});
  ASSERT_TRUE(a.config.has_value());
  EXPECT_EQ(a.config->launch, LaunchWith::kSsh);
  EXPECT_EQ(a.config->launch_reason, "not inside a Slurm allocation");
  auto l = parse({"--launcher", "local", "-np", "2", "true"});
  ASSERT_TRUE(l.config.has_value());
  EXPECT_EQ(l.config->launch, LaunchWith::kLocal);
  testing::internal::CaptureStderr();
  EXPECT_EQ(parse({"--launcher", "slurm", "true"}).exit_code, 2);
  EXPECT_EQ(parse({"--launcher", "pbs", "true"}).exit_code, 2);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("ferryrun: --launcher slurm: not inside a Slurm allocation"),
            std::string::npos)
      << err;

  // Inside an allocation (an srun stand-in on PATH): its nodes go through Slurm, other hosts
  // through SSH.
  const std::string path = ::getenv("PATH");
  ::setenv("PATH", (std::string(FERRY_TEST_DATA) + "/slurm:" + path).c_str(), 1);
  ::symlink("srun-stand-in", (std::string(FERRY_TEST_DATA) + "/slurm/srun").c_str());
  ::setenv("SLURM_JOB_ID", "77", 1);
  ::setenv("SLURM_JOB_NODELIST", "sn[1-2]", 1);
  ::setenv("SLURM_TASKS_PER_NODE", "2(x2)", 1);
  auto in = parse({"true"});
  auto other = parse({"-H", "sn1,elsewhere", "true"});
  auto forced = parse({"--launcher", "ssh", "true"});
  ::unsetenv("SLURM_JOB_ID");
  ::unsetenv("SLURM_JOB_NODELIST");
  ::unsetenv("SLURM_TASKS_PER_NODE");
  ::unlink((std::string(FERRY_TEST_DATA) + "/slurm/srun").c_str());
  ::setenv("PATH", path.c_str(), 1);
  ASSERT_TRUE(in.config.has_value());
  EXPECT_EQ(in.config->launch, LaunchWith::kSlurm);
  EXPECT_EQ(in.config->job.hosts.size(), 2u);
  ASSERT_TRUE(other.config.has_value());
  EXPECT_EQ(other.config->launch, LaunchWith::kSsh);
  ASSERT_TRUE(forced.config.has_value());
  EXPECT_EQ(forced.config->launch, LaunchWith::kSsh);
}

TEST(Cli, RepeatableOptionsTakeOneValueEach) {
  auto r = parse({"-H", "a:2", "-H", "b", "-x", "A=1", "hostname", "-c", "x"});
  ASSERT_TRUE(r.config.has_value());
  EXPECT_EQ(r.config->job.hosts.size(), 2u);
  EXPECT_EQ(r.config->job.command, (std::vector<std::string>{"hostname", "-c", "x"}));
  EXPECT_EQ(parse({"--typo", "true"}).exit_code, 2);
}

TEST(Cli, NormalizeStopsAtTheCommand) {
  auto out = normalize_single_dash({"-np", "2", "-wdir", "/d", "cmd", "-np"}, {"np", "wdir"},
                                   {"--np", "--wdir"});
  EXPECT_EQ(out, (std::vector<std::string>{"--np", "2", "--wdir", "/d", "cmd", "-np"}));
}

TEST(Cli, ProgramNameIsTheNameCalledWhenItPicksAPersonality) {
  EXPECT_EQ(program_name("/usr/bin/mpirun"), "mpirun");
  EXPECT_EQ(program_name("mpiexec"), "mpiexec");
  EXPECT_EQ(program_name("./orterun"), "orterun");
  EXPECT_EQ(program_name("/opt/ferry/bin/horovodrun"), "horovodrun");
  EXPECT_EQ(program_name("ferryrun"), "ferryrun");
  // A renamed binary speaks ferryrun's command line, and says so.
  EXPECT_EQ(program_name("/tmp/launch"), "ferryrun");
  EXPECT_EQ(program_name(""), "ferryrun");
}

// Each error line, whatever produced it (CLI11, the host parsers, the job file reader),
// starts with the name the user called: scripts grep for "mpirun:".
TEST(Cli, ErrorsStartWithTheNameTheUserCalled) {
  struct Case {
    std::vector<std::string> args;
    std::string prefix;
  };
  const std::vector<Case> cases = {
      {{"/usr/bin/mpirun", "-np", "x", "true"}, "mpirun: "},
      {{"mpiexec", "--no-such-flag", "true"}, "mpiexec: "},
      {{"mpirun", "-np", "2", "-H", "a:zero", "true"}, "mpirun: -H: "},
      {{"horovodrun", "-np", "2", "--hostfile", "/nonexistent/hosts", "true"},
       "horovodrun: /nonexistent/hosts: "},
      {{"horovodrun", "--config", "/nonexistent/job.toml", "true"},
       "horovodrun: /nonexistent/job.toml: "},
      {{"horovodrun", "-np", "2"}, "horovodrun: no command given (see horovodrun --help)"},
      {{"ferryrun", "--compat", "mpirun", "-np", "x", "true"}, "ferryrun: "},
      {{"/tmp/launch", "-x", "9=1", "true"}, "ferryrun: "},
  };
  for (const auto& c : cases) {
    testing::internal::CaptureStderr();
    auto r = parse_ferryrun_args(c.args);
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(r.exit_code, 2) << c.args[0] << " " << c.args[1];
    EXPECT_TRUE(err.starts_with(c.prefix)) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  }
}

// --help says what each value is (DIR, FILE, N, NAME VALUE, the choices), in every
// personality, never CLI11's C++ types (TEXT, INT, FLOAT).
TEST(Cli, HelpNamesWhatEachValueIs) {
  for (const char* program : {"ferryrun", "mpirun", "mpiexec", "horovodrun"}) {
    testing::internal::CaptureStdout();
    auto r = parse_ferryrun_args({program, "--help"});
    const std::string out = testing::internal::GetCapturedStdout();
    EXPECT_EQ(r.exit_code, 0);
    for (const char* type : {" TEXT", " INT", " UINT", " FLOAT", ":TEXT"})
      EXPECT_EQ(out.find(type), std::string::npos) << program << " shows '" << type << "':\n"
                                                   << out;
    EXPECT_NE(out.find(" -x VAR[=VALUE] ..."), std::string::npos) << out;
    EXPECT_NE(out.find(" --launcher {auto,ssh,slurm,local,rsh,fork}"), std::string::npos) << out;
    EXPECT_NE(out.find(" --config FILE "), std::string::npos) << out;
  }
  testing::internal::CaptureStdout();
  parse_ferryrun_args({"mpirun", "--help"});
  const std::string mpirun = testing::internal::GetCapturedStdout();
  EXPECT_NE(mpirun.find(" --mca,--gmca NAME VALUE "), std::string::npos) << mpirun;
  EXPECT_NE(mpirun.find(" -n,-c,--np,--n N "), std::string::npos) << mpirun;
  EXPECT_NE(mpirun.find(" --wdir,--wd DIR "), std::string::npos) << mpirun;
}

}  // namespace
}  // namespace ferry
