// MPMD lines through every personality's parser: the parts, their hosts and variables, and
// the one-line refusals.
#include <gtest/gtest.h>

#include "ferry/cli/ferryrun_cli.hpp"
#include "ferryrun_line.hpp"
#include "mpirun_line.hpp"

namespace ferry {
namespace {

using testing_cli::ferryrun;
using testing_cli::temp_file;
using testing_mpirun::mpi;
using Words = std::vector<std::string>;

TEST(CliMpmd, TheColonLineIsOneJobOfTwoParts) {
  auto r = ferryrun({"-np", "2", "-H", "fnode1:2,fnode2:2", "./probe", "A", ":", "-np", "2", "-x",
                     "K=V", "./probe", "B"});
  ASSERT_TRUE(r.config) << r.exit_code;
  const JobOptions& job = r.config->job;
  ASSERT_EQ(job.apps.size(), 2u);
  EXPECT_EQ(job.command, (Words{"./probe", "A"}));
  EXPECT_EQ(job.apps[0].command, (Words{"./probe", "A"}));
  EXPECT_EQ(job.apps[0].np, 2);
  EXPECT_TRUE(job.apps[0].hosts.empty());
  EXPECT_EQ(job.apps[1].command, (Words{"./probe", "B"}));
  EXPECT_EQ(job.apps[1].np, 2);
  EXPECT_EQ(job.apps[1].exports, (Words{"K=V"}));
  EXPECT_EQ(job.hosts.size(), 2u);
}

TEST(CliMpmd, APartsHostsJoinTheJobAndRestrictThePart) {
  auto r =
      mpi({"-np", "1", "-H", "a:2", "./x", ":", "-np", "2", "-H", "b:2,a", "-wdir", "sub", "./y"});
  ASSERT_TRUE(r.config) << r.exit_code;
  const JobOptions& job = r.config->job;
  ASSERT_EQ(job.hosts.size(), 2u);
  EXPECT_EQ(job.hosts[0].name, "a");
  EXPECT_EQ(job.hosts[0].slots, 2);  // "-H a" (one slot) does not shrink a:2
  EXPECT_EQ(job.hosts[1].name, "b");
  EXPECT_EQ(job.apps[1].hosts, (std::vector<size_t>{1, 0}));
  EXPECT_EQ(job.apps[1].wdir, job.wdir + "/sub");
}

TEST(CliMpmd, WithoutHostsThisMachineGetsASlotForEveryRankOfEveryPart) {
  auto r = ferryrun({"-np", "1", "./x", ":", "-np", "3", "./y"});
  ASSERT_TRUE(r.config) << r.exit_code;
  ASSERT_EQ(r.config->job.hosts.size(), 1u);
  EXPECT_EQ(r.config->job.hosts[0].slots, 4);
  ::testing::internal::CaptureStderr();
  auto no_np = ferryrun({"-np", "1", "./x", ":", "./y"});
  EXPECT_EQ(no_np.exit_code, 2);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "ferryrun: part 2 (./y): give it -np N (no hosts were given, so there are no slots "
            "to fill)\n");
}

TEST(CliMpmd, AppfileAndConfigfile) {
  const std::string apps = temp_file("apps.txt", "-np 1 -H a ./x\n-np 2 -H b:2 -x K=V ./y 1\n");
  auto r = mpi({"--app", apps});
  ASSERT_TRUE(r.config) << r.exit_code;
  const JobOptions& job = r.config->job;
  ASSERT_EQ(job.apps.size(), 2u);
  EXPECT_EQ(job.command, (Words{"./x"}));
  EXPECT_EQ(job.apps[0].np, 1);
  EXPECT_EQ(job.apps[1].command, (Words{"./y", "1"}));
  ASSERT_EQ(job.hosts.size(), 2u);  // the parts' hosts, not this machine
  EXPECT_EQ(job.hosts[1].slots, 2);

  const std::string cfg = temp_file("parts.cfg", "-n 1 -env A 1 ./c\n-n 2 ./d\n");
  auto h = mpi({"-hosts", "h1:3", "-configfile", cfg}, "mpiexec");
  ASSERT_TRUE(h.config) << h.exit_code;
  ASSERT_EQ(h.config->job.apps.size(), 2u);
  EXPECT_EQ(h.config->job.apps[0].exports, (Words{"A=1"}));
  EXPECT_EQ(h.config->job.hosts.size(), 1u);
}

TEST(CliMpmd, JobFileApps) {
  const std::string file = temp_file("mpmd.toml",
                                     "hosts = [\"a:3\"]\n"
                                     "[[apps]]\ncommand = [\"./x\"]\nnp = 1\n"
                                     "[[apps]]\ncommand = [\"./y\", \"z\"]\nnp = 2\n"
                                     "environment = { K = \"v\" }\nwdir = \"/w\"\n");
  auto r = ferryrun({"--config", file});
  ASSERT_TRUE(r.config) << r.exit_code;
  const JobOptions& job = r.config->job;
  ASSERT_EQ(job.apps.size(), 2u);
  EXPECT_EQ(job.apps[1].command, (Words{"./y", "z"}));
  EXPECT_EQ(job.apps[1].exports, (Words{"K=v"}));
  EXPECT_EQ(job.apps[1].wdir, "/w");
  // A command on the command line replaces the file's parts.
  auto over = ferryrun({"--config", file, "hostname"});
  ASSERT_TRUE(over.config) << over.exit_code;
  EXPECT_TRUE(over.config->job.apps.empty());
  const std::string both =
      temp_file("both.toml", "command = [\"a\"]\n[[apps]]\ncommand = [\"b\"]\n");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(ferryrun({"--config", both}).exit_code, 2);
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("command and [[apps]] both name"),
            std::string::npos);
}

TEST(CliMpmd, RefusalsAreOneLineAndExitTwo) {
  const std::string apps = temp_file("apps2.txt", "-np 1 ./x\n");
  struct Case {
    const char* argv0;
    Words line;
    std::string says;
  };
  const Case cases[] = {
      {"ferryrun", {"./a", ":", ":", "./b"}, "MPMD line: part 2 of 3 is empty"},
      {"horovodrun", {"-np", "1", "./a", ":", "./b"}, "horovodrun runs one program on every rank"},
      {"ferryrun",
       {"--min-hosts", "1", "-H", "a,b", "./a", ":", "./b"},
       "--min-hosts 1: an MPMD job"},
      {"mpirun", {"--app", apps, "./a"}, "the file names the programs"},
      {"mpirun", {"-np", "2", "--app", apps}, "-np goes on each line of the file"},
      {"mpirun", {"./a", ":", "-np", "0", "./b"}, "part 2: -np: bad value '0'"},
  };
  for (const auto& c : cases) {
    Words args = c.line;
    args.insert(args.begin(), c.argv0);
    ::testing::internal::CaptureStderr();
    auto r = parse_ferryrun_args(args);
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(r.exit_code, 2) << c.says;
    EXPECT_NE(err.find(c.says), std::string::npos) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  }
}

TEST(CliMpmd, AfterTheSeparatorAColonIsAnArgument) {
  auto r = ferryrun({"-np", "1", "--", "echo", "a", ":", "b"});
  ASSERT_TRUE(r.config) << r.exit_code;
  EXPECT_TRUE(r.config->job.apps.empty());
  EXPECT_EQ(r.config->job.command, (Words{"echo", "a", ":", "b"}));
}

}  // namespace
}  // namespace ferry
