// The Slurm launcher with srun played by a stand-in script (tests/data/slurm/srun-stand-in) that
// starts the real ferryd --connect once per node: one step for the hosts opened together, every
// ferryd proving the job secret over its connection back, the secret never on a command line,
// and a peer without the secret refused. The real srun is exercised by the Slurm e2e scenarios.
#include "ferry/transport/slurm_launcher.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>

#include "ferry/transport/connect_back.hpp"
#include "ferry/wire/frame.hpp"
#include "ferry/wire/messages.hpp"

namespace ferry {
namespace {

std::string to_hex(const std::string& raw) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (unsigned char c : raw) {
    s.push_back(d[c >> 4]);
    s.push_back(d[c & 15]);
  }
  return s;
}

TEST(ConnectBack, HmacSha256KnownAnswer) {
  // RFC 4231, test case 2.
  EXPECT_EQ(to_hex(hmac_sha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  EXPECT_TRUE(equal_secret("abc", "abc"));
  EXPECT_FALSE(equal_secret("abc", "abd"));
  EXPECT_FALSE(equal_secret("abc", "ab"));
  EXPECT_NE(ferryd_proof("s", "F", "D", "n1"), ferryd_proof("s", "F", "D", "n2"))
      << "the proof binds the node name";
}

// Writes an executable script at `path`.
void write_script(const std::string& path, const std::string& text) {
  {
    std::ofstream f(path);
    f << text;
  }
  ::chmod(path.c_str(), 0755);
}

struct Opened {
  std::map<std::string, std::string> hello_host;  // host → Hello's hostname
  std::map<std::string, std::string> errors;
};

Opened open_hosts(asio::io_context& io, SlurmLauncher& launcher,
                  const std::vector<std::string>& names,
                  std::vector<std::unique_ptr<Link>>& links) {
  Opened o;
  size_t answered = 0;
  auto readers = std::make_shared<std::map<std::string, wire::FrameReader>>();
  for (const auto& n : names) {
    HostEntry h;
    h.name = n;
    DaemonCommand cmd;
    cmd.ferryd_path = std::string(FERRY_BIN_DIR) + "/ferryd";
    launcher.async_open(h, cmd, [&, n, readers](Result<std::unique_ptr<Link>> r) {
      ++answered;
      if (!r) {
        o.errors[n] = r.error().message;
        return;
      }
      Link& l = *r.value();
      links.push_back(std::move(r.value()));
      l.start(
          [&, n, readers](std::string_view bytes) {
            auto& rd = (*readers)[n];
            rd.feed(bytes);
            auto f = rd.next();
            if (f && *f) {
              auto hello = wire::decode<wire::Hello>(**f);
              o.hello_host[n] = hello ? hello->hostname : "bad hello";
            }
          },
          [](const std::string&) {});
    });
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while ((answered < names.size() || o.hello_host.size() + o.errors.size() < names.size()) &&
         std::chrono::steady_clock::now() < deadline)
    io.run_for(std::chrono::milliseconds(20));
  return o;
}

class SlurmLauncherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ferry-srun-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    args_file_ = dir_ + "/args";
    ::setenv("SRUN_ARGS_FILE", args_file_.c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("SRUN_ARGS_FILE");
    std::system(("rm -rf " + dir_).c_str());
  }
  std::string dir_, args_file_;
};

TEST_F(SlurmLauncherTest, OneStepForTheHostsOpenedTogetherEachFerrydProvesTheSecret) {
  asio::io_context io;
  SlurmOptions so;
  so.srun = std::string(FERRY_TEST_DATA) + "/slurm/srun-stand-in";
  std::vector<std::string> log;
  so.log = [&](const std::string& l) { log.push_back(l); };
  SlurmLauncher launcher(io, so);
  std::vector<std::unique_ptr<Link>> links;
  Opened o = open_hosts(io, launcher, {"n1", "n2", "n3"}, links);
  EXPECT_TRUE(o.errors.empty()) << o.errors.begin()->second;
  EXPECT_EQ(o.hello_host.size(), 3u);
  std::ifstream in(args_file_);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string args = ss.str();
  EXPECT_NE(args.find("--nodes=3\n--ntasks=3\n--ntasks-per-node=1\n--nodelist=n1,n2,n3\n"
                      "--kill-on-bad-exit\n--mpi=none\n--cpu-bind=none\n"),
            std::string::npos)
      << args;
  EXPECT_NE(args.find("/ferryd\n--connect\n"), std::string::npos) << args;
  EXPECT_EQ(args.find(kConnectSecretVar), std::string::npos);
  for (auto& l : links) l->close();
  io.run_for(std::chrono::milliseconds(200));
}

// A connection that does not know the secret is dropped; the real ferryd still gets in.
TEST_F(SlurmLauncherTest, APeerWithoutTheSecretIsRefused) {
  asio::io_context io;
  SlurmOptions so;
  // A stand-in that first sends an impostor for n1 (wrong secret), then starts the real ones.
  const std::string impostor = dir_ + "/srun";
  write_script(impostor,
               "#!/bin/bash\n"
               "FERRY_CONNECT_SECRET=wrong SLURMD_NODENAME=n1 \"$(dirname \"$0\")/ferryd\" "
               "--connect 2>\"$(dirname \"$0\")/impostor.err\"\n"
               "exec " +
                   std::string(FERRY_TEST_DATA) + "/slurm/srun-stand-in \"$@\"\n");
  ::symlink((std::string(FERRY_BIN_DIR) + "/ferryd").c_str(), (dir_ + "/ferryd").c_str());
  so.srun = impostor;
  SlurmLauncher launcher(io, so);
  std::vector<std::unique_ptr<Link>> links;
  Opened o = open_hosts(io, launcher, {"n1"}, links);
  EXPECT_TRUE(o.errors.empty());
  EXPECT_EQ(o.hello_host.size(), 1u);
  std::ifstream err(dir_ + "/impostor.err");
  std::stringstream ss;
  ss << err.rdbuf();
  EXPECT_NE(ss.str().find("ferryrun refused this ferryd"), std::string::npos) << ss.str();
  for (auto& l : links) l->close();
  io.run_for(std::chrono::milliseconds(200));
}

// A job that goes on without a lost host must not have Slurm end every ferryd when one fails;
// srun's notice that the cluster binds no CPUs (for --cpu-bind=none) is not shown, its other
// lines are.
TEST_F(SlurmLauncherTest, ASurvivableLossKeepsTheStepAndTheCpuBindNoticeIsDropped) {
  asio::io_context io;
  SlurmOptions so;
  so.survive_lost_host = true;
  const std::string noisy = dir_ + "/srun";
  write_script(noisy,
               "#!/bin/sh\n"
               "echo 'srun: cluster configuration lacks support for cpu binding' >&2\n"
               "echo 'srun: something else' >&2\n"
               "exec " +
                   std::string(FERRY_TEST_DATA) + "/slurm/srun-stand-in \"$@\"\n");
  so.srun = noisy;
  std::vector<std::string> log;
  so.log = [&](const std::string& l) { log.push_back(l); };
  SlurmLauncher launcher(io, so);
  std::vector<std::unique_ptr<Link>> links;
  Opened o = open_hosts(io, launcher, {"n1", "n2"}, links);
  EXPECT_TRUE(o.errors.empty());
  std::ifstream in(args_file_);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_NE(ss.str().find("--nodelist=n1,n2\n--kill-on-bad-exit=0\n--mpi=none\n--cpu-bind=none\n"
                          "--quiet\n--no-kill\n"),
            std::string::npos)
      << ss.str();
  EXPECT_EQ(log, std::vector<std::string>{"srun: something else"});
  for (auto& l : links) l->close();
  io.run_for(std::chrono::milliseconds(200));
}

TEST_F(SlurmLauncherTest, SrunFailingBeforeFerrydConnectsFailsEveryHostInOneLine) {
  asio::io_context io;
  SlurmOptions so;
  const std::string bad = dir_ + "/srun";
  write_script(bad,
               "#!/bin/sh\necho 'srun: error: Unable to allocate resources: Invalid node name' "
               ">&2\nexit 1\n");
  so.srun = bad;
  so.log = [](const std::string&) {};
  SlurmLauncher launcher(io, so);
  std::vector<std::unique_ptr<Link>> links;
  Opened o = open_hosts(io, launcher, {"n1", "n2"}, links);
  ASSERT_EQ(o.errors.size(), 2u);
  EXPECT_EQ(o.errors["n2"],
            "n2: srun exited with status 1 before ferryd connected: srun: error: Unable to "
            "allocate resources: Invalid node name");
}

}  // namespace
}  // namespace ferry
