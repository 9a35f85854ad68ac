// mpirun personality: argv[0] `mpirun`/`mpiexec` or `ferryrun --compat mpirun`.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "ferry/cli/ferryrun_cli.hpp"
#include "mpirun_line.hpp"

namespace ferry {
namespace {

using testing_mpirun::has;
using testing_mpirun::mpi;

TEST(CliMpirun, OpenMpiDefaultsUntaggedWithOpenMpiFiles) {
  auto r = mpi({"-np", "4", "--host", "a:2,b:2", "./app"});
  ASSERT_TRUE(r.config.has_value());
  EXPECT_EQ(r.config->output.tag, TagStyle::kNone);
  EXPECT_EQ(r.config->output.layout, FileLayout::kOpenMpi);
  EXPECT_EQ(r.config->job.np, 4);
  // Only -x variables are exported (unlike horovodrun).
  EXPECT_TRUE(r.config->job.exports.empty());
  EXPECT_EQ(r.config->program, "mpirun");
}

TEST(CliMpirun, SingleDashLongOptionsAsJobScriptsWriteThem) {
  auto r = mpi({"-np",
                "2",
                "-hostfile",
                FERRY_SOURCE_DIR "/hostfiles/two-nodes.txt",
                "-wdir",
                "/tmp",
                "-x",
                "A=1",
                "-bind-to",
                "core",
                "-map-by",
                "slot",
                "-tag-output",
                "-timestamp-output",
                "-output-filename",
                "/tmp/o",
                "-merge-stderr-to-stdout",
                "-stdin",
                "none",
                "-oversubscribe",
                "-allow-run-as-root",
                "-report-bindings",
                "./app",
                "-np",
                "9"},
               "mpiexec");
  ASSERT_TRUE(r.config.has_value());
  const FrontendConfig& c = *r.config;
  EXPECT_EQ(c.job.hosts.size(), 2u);
  EXPECT_EQ(c.job.wdir, "/tmp");
  EXPECT_TRUE(c.job.wdir_explicit);
  EXPECT_TRUE(has(c.job.exports, "A=1"));
  EXPECT_EQ(c.job.binding.bind_to, BindTo::kCore);
  EXPECT_EQ(c.output.tag, TagStyle::kOpenMpi);
  EXPECT_TRUE(c.output.timestamps);
  EXPECT_EQ(c.output.output_dir, "/tmp/o");
  EXPECT_TRUE(c.output.merge_stderr);
  EXPECT_EQ(c.job.stdin_rank, -1);
  EXPECT_TRUE(c.job.oversubscribe);
  EXPECT_TRUE(c.job.binding.report_bindings);
  EXPECT_EQ(c.job.command, (std::vector<std::string>{"./app", "-np", "9"}));
}

TEST(CliMpirun, ProcessCountSpellings) {
  for (auto flag : {"-np", "-n", "-c", "--np"}) {
    auto r = mpi({flag, "3", "true"});
    ASSERT_TRUE(r.config.has_value()) << flag;
    EXPECT_EQ(r.config->job.np, 3) << flag;
  }
}

TEST(CliMpirun, MapByNodeRankByAndPerNode) {
  auto r = mpi({"-np", "4", "-H", "a:2,b:2", "--map-by", "node:PE=2", "true"});
  ASSERT_TRUE(r.config.has_value());
  EXPECT_EQ(r.config->job.placement.mapping, HostMapping::kByNode);
  EXPECT_EQ(r.config->job.binding.map_by, MapBy::kNode);
  EXPECT_EQ(r.config->job.binding.pe, 2);
  auto n = mpi({"-N", "2", "-H", "a:4,b:4", "true"});
  ASSERT_TRUE(n.config.has_value());
  EXPECT_EQ(n.config->job.placement.per_host, 2);
  auto ppr = mpi({"--map-by", "ppr:3:node:OVERSUBSCRIBE", "-H", "a,b", "true"});
  ASSERT_TRUE(ppr.config.has_value());
  EXPECT_EQ(ppr.config->job.placement.per_host, 3);
  EXPECT_TRUE(ppr.config->job.oversubscribe);
  auto rank = mpi({"--rank-by", "node", "-H", "a:2,b:2", "true"});
  ASSERT_TRUE(rank.config.has_value());
  EXPECT_EQ(rank.config->job.placement.order, RankOrder::kByNode);
  EXPECT_EQ(mpi({"--map-by", "ppr:2:socket", "true"}).exit_code, 2);
  EXPECT_EQ(mpi({"--bind-to", "board", "true"}).exit_code, 2);
  EXPECT_EQ(mpi({"--rank-by", "diagonal", "true"}).exit_code, 2);
}

TEST(CliMpirun, PlmRshArgsBecomeSshSettings) {
  auto r = mpi({"-np", "2", "--mca", "plm_rsh_args", "-p 2222 -i /k -l user", "-mca", "btl",
                "tcp,self", "./app"});
  ASSERT_TRUE(r.config.has_value());
  EXPECT_EQ(r.config->ssh.port, 2222);
  EXPECT_EQ(r.config->ssh.identity_file, "/k");
  EXPECT_EQ(r.config->ssh.user, "user");
  EXPECT_EQ(r.config->job.command, (std::vector<std::string>{"./app"}));
  auto o =
      mpi({"--mca", "plm_rsh_args",
           "-o Port=2300 -o User=bob -o IdentityFile=/id -o StrictHostKeyChecking=no", "true"});
  ASSERT_TRUE(o.config.has_value());
  EXPECT_EQ(o.config->ssh.port, 2300);
  EXPECT_EQ(o.config->ssh.user, "bob");
  EXPECT_EQ(o.config->ssh.identity_file, "/id");
  EXPECT_TRUE(o.config->ssh.accept_new);
  EXPECT_EQ(mpi({"--mca", "plm_rsh_args", "-o ProxyJump=x", "true"}).exit_code, 2);
  EXPECT_EQ(mpi({"--mca", "plm_rsh_args", "-p 99999", "true"}).exit_code, 2);
  EXPECT_EQ(mpi({"--mca", "plm_rsh_agent", "rsh", "true"}).exit_code, 2);
  EXPECT_EQ(mpi({"--mca", "plm_rsh_args"}).exit_code, 2);
}

TEST(CliMpirun, OtherMcaReachesTheRanksAsOmpiMcaVariables) {
  auto r = mpi({"--mca", "btl", "^openib", "-mca", "pml", "ob1", "-x", "OMPI_MCA_pml=cm", "true"});
  ASSERT_TRUE(r.config.has_value());
  const auto& ex = r.config->job.exports;
  EXPECT_NE(std::find(ex.begin(), ex.end(), "OMPI_MCA_btl=^openib"), ex.end());
  // -x is the user's word for the variable itself: it wins over --mca.
  EXPECT_NE(std::find(ex.begin(), ex.end(), "OMPI_MCA_pml=cm"), ex.end());
  EXPECT_EQ(std::find(ex.begin(), ex.end(), "OMPI_MCA_pml=ob1"), ex.end());
}

TEST(CliMpirun, TcpInterfaceListsChooseFerrysInterfaceUnlessOneIsGiven) {
  auto r = mpi({"--mca", "btl_tcp_if_include", "eth1,ib0", "true"});
  ASSERT_TRUE(r.config.has_value());
  EXPECT_EQ(r.config->job.network_interfaces, (std::vector<std::string>{"eth1", "ib0"}));
  const auto& ex = r.config->job.exports;
  EXPECT_NE(std::find(ex.begin(), ex.end(), "OMPI_MCA_btl_tcp_if_include=eth1,ib0"), ex.end());
  auto o = mpi({"--mca", "oob_tcp_if_include", "eth2", "true"});
  ASSERT_TRUE(o.config.has_value());
  EXPECT_EQ(o.config->job.network_interfaces, (std::vector<std::string>{"eth2"}));
}

TEST(CliMpirun, TcpInterfaceExclusionsAreNeverChosen) {
  auto r = mpi({"--mca", "btl_tcp_if_exclude", "lo,docker0", "true"});
  ASSERT_TRUE(r.config.has_value());
  EXPECT_EQ(r.config->job.network_exclude, (std::vector<std::string>{"lo", "docker0"}));
  EXPECT_TRUE(r.config->job.network_interfaces.empty());
}

TEST(CliMpirun, OmpiMcaVariablesOfThisEnvironmentReachTheRanks) {
  ::setenv("OMPI_MCA_ferry_test_param", "42", 1);
  auto r = mpi({"true"});
  ::unsetenv("OMPI_MCA_ferry_test_param");
  ASSERT_TRUE(r.config.has_value());
  const auto& ex = r.config->job.exports;
  EXPECT_NE(std::find(ex.begin(), ex.end(), "OMPI_MCA_ferry_test_param=42"), ex.end());
}

// --prefix is Open MPI's install prefix on the hosts: the ranks get its bin and lib first on
// PATH and LD_LIBRARY_PATH (ferryd applies them over each host's own values), and ferryd stays
// the usual one unless this machine has one under the prefix.
TEST(CliMpirun, PrefixPutsOpenMpisDirectoriesFirstForTheRanks) {
  auto r = mpi({"--prefix", "/opt/openmpi-4.1.6/", "true"});
  ASSERT_TRUE(r.config.has_value());
  EXPECT_EQ(r.config->job.path_prepends,
            (std::vector<std::string>{"PATH=/opt/openmpi-4.1.6/bin",
                                      "LD_LIBRARY_PATH=/opt/openmpi-4.1.6/lib"}));
  auto plain = mpi({"true"});
  ASSERT_TRUE(plain.config.has_value());
  EXPECT_EQ(r.config->job.ferryd_path, plain.config->job.ferryd_path);  // not under the prefix
  EXPECT_TRUE(plain.config->job.path_prepends.empty());
}

TEST(CliMpirun, PrefixNamesFerrydWhereThisMachineHasOneThere) {
  char dir[] = "/tmp/ferry-prefix.XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string bin = std::string(dir) + "/bin";
  ASSERT_EQ(::mkdir(bin.c_str(), 0700), 0);
  const std::string ferryd = bin + "/ferryd";
  { std::ofstream(ferryd) << "#!/bin/sh\n"; }
  ASSERT_EQ(::chmod(ferryd.c_str(), 0700), 0);
  auto r = mpi({"--prefix", std::string(dir) + "/", "true"});
  ASSERT_TRUE(r.config.has_value());
  EXPECT_EQ(r.config->job.ferryd_path, ferryd);
  auto f = mpi({"--prefix", dir, "--ferryd", "/x/ferryd", "true"});
  ASSERT_TRUE(f.config.has_value());
  EXPECT_EQ(f.config->job.ferryd_path, "/x/ferryd");  // --ferryd wins
  EXPECT_EQ(f.config->job.path_prepends.size(), 2u);
  ::unlink(ferryd.c_str());
  ::rmdir(bin.c_str());
  ::rmdir(dir);
}

TEST(CliMpirun, PrefixMustBeAnAbsolutePathWithoutColons) {
  testing::internal::CaptureStderr();
  auto rel = mpi({"--prefix", "opt/ompi", "true"});
  auto colon = mpi({"--prefix", "/opt/a:b", "true"});
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(rel.config.has_value());
  EXPECT_EQ(rel.exit_code, 2);
  EXPECT_FALSE(colon.config.has_value());
  EXPECT_NE(err.find("mpirun: --prefix: 'opt/ompi' is not an absolute path\n"), std::string::npos)
      << err;
  EXPECT_NE(err.find("mpirun: --prefix: '/opt/a:b' has a ':', which would split PATH\n"),
            std::string::npos)
      << err;
}

TEST(CliMpirun, StdinChoices) {
  auto r = mpi({"-np", "4", "--stdin", "2", "true"});
  ASSERT_TRUE(r.config.has_value());
  EXPECT_EQ(r.config->job.stdin_rank, 2);
  testing::internal::CaptureStderr();
  auto all = mpi({"-np", "4", "--stdin", "all", "true"});
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(all.exit_code, 2);
  EXPECT_EQ(err,
            "mpirun: --stdin all: ferry forwards stdin to one rank only; give a rank "
            "(--stdin 0) or none\n");
  // A rank beyond the job's is refused once the ranks are placed (App tests), not here.
  EXPECT_EQ(mpi({"-np", "4", "--stdin", "4", "true"}).config->job.stdin_rank, 4);
  EXPECT_EQ(mpi({"-np", "4", "--stdin", "x", "true"}).exit_code, 2);
}

TEST(CliMpirun, UnknownOptionsAreErrorsNotCommands) {
  testing::internal::CaptureStderr();
  auto r = mpi({"-np", "2", "--display-everything", "./app"});
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(err.find("unknown option '--display-everything'"), std::string::npos) << err;
  // CLI11 would read a misspelt single-dash option as a cluster of short flags: -hostfilee as
  // -h (help, exit 0) and -vx as -v -x (the command taken as -x's value).
  // A short option that takes a number would take the rest as its value: -ckpointlib (one of
  // hydra's) as -c "kpointlib", and the error would be about -np.
  for (const char* typo : {"-hostfilee", "-vx", "-Vq", "-ckpointlib", "-nolocalx", "-Nx"}) {
    testing::internal::CaptureStderr();
    auto t = mpi({"-np", "2", typo, "f", "./app"});
    err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(t.exit_code, 2) << typo;
    EXPECT_EQ(err, std::string("mpirun: unknown option '") + typo +
                       "' (see mpirun --help; put the command after -- if it starts with '-')\n");
  }
}

TEST(CliMpirun, ShortNumberOptionsStillTakeAttachedNumbers) {
  auto n = mpi({"-n4", "true"});
  ASSERT_TRUE(n.config.has_value());
  EXPECT_EQ(n.config->job.np, 4);
  auto c = mpi({"-c2", "-N1", "true"});
  ASSERT_TRUE(c.config.has_value());
  EXPECT_EQ(c.config->job.np, 2);
}

// The spellings Open MPI 4.1's mpirun still takes from its 1.x days.
TEST(CliMpirun, OlderSpellingsMeanWhatOpenMpiMeans) {
  auto node = mpi({"-np", "4", "-H", "a:2,b:2", "-bynode", "true"});
  ASSERT_TRUE(node.config.has_value());
  EXPECT_EQ(node.config->job.placement.mapping, HostMapping::kByNode);
  auto slot = mpi({"--byslot", "true"});
  ASSERT_TRUE(slot.config.has_value());
  EXPECT_EQ(slot.config->job.binding.map_by, MapBy::kSlot);
  auto core = mpi({"-bycore", "true"});
  ASSERT_TRUE(core.config.has_value());
  EXPECT_EQ(core.config->job.binding.bind_to, BindTo::kCore);
  auto bind = mpi({"-bind-to-socket", "true"});
  ASSERT_TRUE(bind.config.has_value());
  EXPECT_EQ(bind.config->job.binding.bind_to, BindTo::kSocket);
  EXPECT_EQ(mpi({"--bind-to-core", "true"}).config->job.binding.bind_to, BindTo::kCore);
  auto per = mpi({"-pernode", "-H", "a:4,b:4", "true"});
  ASSERT_TRUE(per.config.has_value());
  EXPECT_EQ(per.config->job.placement.per_host, 1);
  auto ppr = mpi({"--ppr", "3:node", "-H", "a:4,b:4", "true"});
  ASSERT_TRUE(ppr.config.has_value());
  EXPECT_EQ(ppr.config->job.placement.per_host, 3);
  EXPECT_EQ(mpi({"--n", "3", "true"}).config->job.np, 3);
  // The same word twice is fine; the default is no oversubscription, whatever the file said.
  EXPECT_TRUE(mpi({"--bynode", "--map-by", "node", "true"}).config.has_value());
  auto no = mpi({"--map-by", "slot:OVERSUBSCRIBE", "--nooversubscribe", "true"});
  ASSERT_TRUE(no.config.has_value());
  EXPECT_FALSE(no.config->job.oversubscribe);
}

TEST(CliMpirun, ContradictingSpellingsAreOneLineNamingBoth) {
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"--map-by", "slot", "--bynode"},
       "mpirun: --map-by slot and --bynode contradict each other: give one\n"},
      {{"-bynode", "--ppr", "2:node"},
       "mpirun: -bynode and --ppr 2:node contradict each other: give one\n"},
      {{"-map-by", "slot", "-bynode"},
       "mpirun: -map-by slot and -bynode contradict each other: give one\n"},
      {{"--bind-to", "none", "--bind-to-core"},
       "mpirun: --bind-to none and --bind-to-core contradict each other: give one\n"},
      {{"--pernode", "-N", "2"}, "mpirun: --pernode and -N 2 contradict each other: give one\n"},
      {{"-pernode", "-N", "2"}, "mpirun: -pernode and -N 2 contradict each other: give one\n"},
      {{"--ppr", "2:socket"},
       "mpirun: --ppr 2:socket: only ranks per node are supported (--ppr N:node, or -N N)\n"},
  };
  for (const auto& [args, want] : cases) {
    std::vector<std::string> line = args;
    line.emplace_back("true");
    testing::internal::CaptureStderr();
    auto r = mpi(line);
    EXPECT_EQ(r.exit_code, 2) << want;
    EXPECT_EQ(testing::internal::GetCapturedStderr(), want);
  }
}

// Flags of Open MPI's mpirun that ferry cannot honour: one line that names the flag as given
// and what to use; never a command, never a silent run.
TEST(CliMpirun, FlagsFerryCannotHonourAreRefusedWithTheReason) {
  testing::internal::CaptureStderr();
  auto r = mpi({"-np", "2", "-am", "params.conf", "./app"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "mpirun: -am: MCA parameter set files are not read by ferry; give each setting as "
            "--mca NAME VALUE\n");
  const std::vector<std::vector<std::string>> refused = {{"-am", "f"},
                                                         {"-tune", "f"},
                                                         {"--cpu-set", "0-3"},
                                                         {"--cpu-list", "0,1"},
                                                         {"-npersocket", "2"},
                                                         {"--nolocal"},
                                                         {"--display-topo"},
                                                         {"--enable-recovery"},
                                                         {"--continuous"},
                                                         {"--path", "/p"},
                                                         {"--launch-agent", "x"},
                                                         {"--debug"},
                                                         {"--tv"},
                                                         {"--debugger", "gdb"},
                                                         {"--xterm", "1"},
                                                         {"--xml"},
                                                         {"--xml-file", "f"},
                                                         {"--output-proctable"},
                                                         {"--report-events", "u"},
                                                         {"--report-pid", "-"},
                                                         {"--report-uri", "-"},
                                                         {"--index-argv-by-rank"},
                                                         {"--set-cwd-to-session-dir"},
                                                         {"--personality", "ompi"},
                                                         {"--cartofile", "f"},
                                                         {"--dvm"},
                                                         {"--novm"},
                                                         {"--hnp", "u"},
                                                         {"--ompi-server", "u"},
                                                         {"--max-vm-size", "2"}};
  for (const auto& flag : refused) {
    std::vector<std::string> line = flag;
    line.insert(line.end(), {"-np", "1", "./app"});
    testing::internal::CaptureStderr();
    auto out = mpi(line);
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(out.exit_code, 2) << flag[0];
    // Named as given: "-am", "--rankfile".
    EXPECT_TRUE(err.starts_with("mpirun: " + flag[0] + ": ")) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  }
}

TEST(CliMpirun, FlagsThatChangeNothingAreAcceptedAndSaidUnderVerbose) {
  for (const char* flag : {"--disable-recovery", "--leave-session-attached", "--do-not-resolve",
                           "--use-regexp", "--report-child-jobs-separately", "--show-progress",
                           "--noprefix", "--enable-instant-on-support", "--fwd-mpirun-port", "-d",
                           "--debug-devel", "--debug-daemons", "--debug-daemons-file"}) {
    testing::internal::CaptureStderr();
    auto r = mpi({flag, "-v", "-np", "1", "./app"});
    std::string err = testing::internal::GetCapturedStderr();
    ASSERT_TRUE(r.config.has_value()) << flag;
    EXPECT_EQ(r.config->job.command, (std::vector<std::string>{"./app"})) << flag;
    EXPECT_NE(err.find(std::string("mpirun: note: ") + flag + ": "), std::string::npos) << err;
  }
  // Named as given, one dash or two.
  testing::internal::CaptureStderr();
  ASSERT_TRUE(mpi({"-use-regexp", "-v", "-np", "1", "./app"}).config.has_value());
  EXPECT_NE(testing::internal::GetCapturedStderr().find("mpirun: note: -use-regexp: "),
            std::string::npos);
}

TEST(CliMpirun, DisplayFlagsPrintTheMapAndTheAllocation) {
  for (const char* flag : {"--display-map", "--display-devel-map", "--display-diffable-map"}) {
    auto r = mpi({flag, "true"});
    ASSERT_TRUE(r.config.has_value()) << flag;
    EXPECT_TRUE(r.config->job.binding.report_bindings) << flag;
  }
  auto d = mpi({"--map-by", "node:DISPLAY", "true"});
  ASSERT_TRUE(d.config.has_value());
  EXPECT_TRUE(d.config->job.binding.report_bindings);
  EXPECT_FALSE(mpi({"true"}).config->job.binding.report_bindings);

  testing::internal::CaptureStderr();
  auto a = mpi({"--display-allocation", "-H", "a:2,bob@b:3", "--hostfile",
                FERRY_SOURCE_DIR "/hostfiles/two-nodes.txt", "true"});
  std::string err = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(a.config.has_value());
  const std::string want =
      "mpirun: allocated hosts: 4, slots: 13\n  a slots=2 (-H)\n  b slots=3 user=bob (-H)\n";
  EXPECT_TRUE(err.starts_with(want)) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 5) << err;
}

TEST(CliMpirun, HwthreadsAsCpusBindToHwthreadsUnlessBindToSaysOtherwise) {
  auto r = mpi({"--use-hwthread-cpus", "true"});
  ASSERT_TRUE(r.config.has_value());
  EXPECT_EQ(r.config->job.binding.bind_to, BindTo::kHwthread);
  auto core = mpi({"-use-hwthread-cpus", "--bind-to", "core", "true"});
  ASSERT_TRUE(core.config.has_value());
  EXPECT_EQ(core.config->job.binding.bind_to, BindTo::kCore);
  EXPECT_EQ(mpi({"--bind-to", "none", "--use-hwthread-cpus", "true"}).config->job.binding.bind_to,
            BindTo::kNone);
}

TEST(CliMpirun, PreloadsAreSyncedFilesAndTheProgramRunsAsItsCopy) {
  const std::string dir = ::testing::TempDir() + "preload";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/in.txt") << "input";
  std::ofstream(dir + "/solver") << "#!/bin/sh\n";
  ::chmod((dir + "/solver").c_str(), 0755);
  auto r = mpi({"-H", "a,b", "-s", "--preload-files", dir + "/in.txt", dir + "/solver", "x"});
  ASSERT_TRUE(r.config.has_value());
  const auto& job = r.config->job;
  ASSERT_NE(job.sync_request, nullptr);
  auto tree = read_sync_request(*job.sync_request);  // as the job reads it
  ASSERT_TRUE(tree.ok()) << tree.error().message;
  ASSERT_EQ(tree->entries().size(), 2u);
  EXPECT_EQ(tree->entries()[0].path, "in.txt");
  EXPECT_EQ(tree->entries()[1].path, "solver");
  EXPECT_EQ(tree->entries()[1].mode, 0755u);
  EXPECT_EQ(job.command, (std::vector<std::string>{"./solver", "x"}));
  testing::internal::CaptureStderr();
  EXPECT_EQ(mpi({"-H", "a", "--preload-files", dir + "/nope", "true"}).exit_code, 2);
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "mpirun: --preload-files " + dir + "/nope: not a file\n");
  testing::internal::CaptureStderr();
  EXPECT_EQ(mpi({"-H", "a", "-s", "no-such-program-here", "x"}).exit_code, 2);
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "mpirun: --preload-binary: no-such-program-here is not on this machine's PATH\n");
}

TEST(CliMpirun, DoNotLaunchIsFerrysCheck) {
  auto r = mpi({"--do-not-launch", "-H", "a,b", "./app"});
  ASSERT_TRUE(r.config.has_value());
  EXPECT_TRUE(r.config->job.check);
}

TEST(CliMpirun, DefaultHostfileOnlyWithoutHostsOnTheLine) {
  const std::string file = FERRY_SOURCE_DIR "/hostfiles/two-nodes.txt";
  auto r = mpi({"--default-hostfile", file, "true"});
  ASSERT_TRUE(r.config.has_value());
  EXPECT_EQ(r.config->job.hosts.size(), 2u);
  auto h = mpi({"--default-hostfile", file, "-H", "c:1", "true"});
  ASSERT_TRUE(h.config.has_value());
  ASSERT_EQ(h.config->job.hosts.size(), 1u);
  EXPECT_EQ(h.config->job.hosts[0].name, "c");
}

TEST(CliMpirun, GlobalMcaIsMca) {
  auto r = mpi({"--gmca", "btl", "self,tcp", "-gmca", "pml", "ob1", "true"});
  ASSERT_TRUE(r.config.has_value());
  const auto& ex = r.config->job.exports;
  EXPECT_NE(std::find(ex.begin(), ex.end(), "OMPI_MCA_btl=self,tcp"), ex.end());
  EXPECT_NE(std::find(ex.begin(), ex.end(), "OMPI_MCA_pml=ob1"), ex.end());
}

}  // namespace
}  // namespace ferry
