// Which hosts ferryrun starts itself (fork/exec) and which it reaches over SSH. A name or
// address of this machine with its own port or user is a container behind a published port,
// reached over SSH; the global -p / -l never change that.
#include "ferry/frontend/host_reach.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include "ferry/frontend/job.hpp"
#include "job_test_support.hpp"

namespace ferry {
namespace {

HostEntry entry(const std::string& name, int port = 0, const std::string& user = "") {
  HostEntry h;
  h.name = name;
  h.port = port;
  h.user = user;
  return h;
}

struct Case {
  HostEntry host;
  bool this_machine;
  SshDefaults defaults;
  bool local;
  std::string reason;
};

TEST(HostReach, TheEntrysOwnPortOrUserDecidesNeverTheGlobalOnes) {
  const std::vector<Case> cases = {
      {entry("localhost"), true, {}, true, "this machine"},
      {entry("localhost"),
       true,
       {2222, ""},
       true,
       "this machine; the global SSH port 2222 does not apply to it"},
      {entry("127.0.0.1"),
       true,
       {0, "bob"},
       true,
       "this machine; the global SSH user bob does not apply to it"},
      {entry("::1"),
       true,
       {2222, "bob"},
       true,
       "this machine; the global SSH port 2222 and user bob do not apply to it"},
      {entry("127.0.0.1", 2201),
       true,
       {},
       false,
       "local address, but the entry names its own port 2201"},
      // Its own port, even when it is the global one too.
      {entry("127.0.0.1", 2222),
       true,
       {2222, ""},
       false,
       "local address, but the entry names its own port 2222"},
      {entry("::1", 0, "root"),
       true,
       {},
       false,
       "local address, but the entry names its own user root"},
      {entry("localhost", 2202, "root"),
       true,
       {},
       false,
       "local name, but the entry names its own port 2202 and user root"},
      {entry("node1"), false, {}, false, "not a name or address of this machine"},
      {entry("node1", 2222, "root"),
       false,
       {22, "bob"},
       false,
       "not a name or address of this machine"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.host.name + " port " + std::to_string(c.host.port) + " user '" + c.host.user +
                 "'");
    HostReach r = decide_host_reach(c.host, c.this_machine, c.defaults);
    EXPECT_EQ(r.local, c.local);
    EXPECT_EQ(r.reason, c.reason);
  }
}

TEST(HostReach, LoopbackWithItsOwnPortIsSsh) {
  EXPECT_FALSE(decide_host_reach(entry("127.0.0.1", 2201), SshDefaults{}).local);
  EXPECT_FALSE(decide_host_reach(entry("localhost", 0, "root"), SshDefaults{}).local);
  EXPECT_TRUE(decide_host_reach(entry("127.0.0.1"), SshDefaults{2201, "root"}).local);
  char name[256] = {};
  ASSERT_EQ(::gethostname(name, sizeof name - 1), 0);
  EXPECT_TRUE(decide_host_reach(entry(name), SshDefaults{2201, ""}).local);
  EXPECT_FALSE(decide_host_reach(entry(name, 2201), SshDefaults{}).local);
}

TEST(HostReach, HostfilePortAndUserAreTheEntrysOwn) {
  auto hosts = parse_hostfile_text(
      "127.0.0.1 slots=2 port=2201\n127.0.0.1 slots=2 port=2202\nroot@localhost\n"
      "localhost user=root\nlocalhost slots=2\n",
      "hosts.txt");
  ASSERT_TRUE(hosts.ok()) << hosts.error().message;
  ASSERT_EQ(hosts->size(), 4u);  // the two root@localhost lines are one host
  for (int i = 0; i < 3; ++i)
    EXPECT_FALSE(decide_host_reach((*hosts)[i], SshDefaults{}).local) << (*hosts)[i].origin;
  EXPECT_TRUE(decide_host_reach((*hosts)[3], SshDefaults{}).local);
}

// Fails every open, saying which launcher was asked: nothing is started.
class TaggedLauncher : public Launcher {
 public:
  TaggedLauncher(asio::io_context& io, std::string tag) : io_(io), tag_(std::move(tag)) {}
  void async_open(const HostEntry& host, const DaemonCommand&, OpenHandler h) override {
    std::string why = tag_ + " asked for " + host.name + ":" + std::to_string(host.port);
    asio::post(io_, [h, why] { h(make_error(why)); });
  }
  void cancel_all() override {}

 private:
  asio::io_context& io_;
  std::string tag_;
};

TEST(HostReach, JobOpensContainersBehindPublishedPortsOverSsh) {
  asio::io_context io;
  char path[] = "/tmp/ferry-diag-XXXXXX";
  int fd = ::mkstemp(path);
  ::unlink(path);
  NullSink sink;
  Diagnostics diag(&sink, fd, true);
  TaggedLauncher local(io, "local"), remote(io, "ssh");
  JobOptions o;
  o.hosts = {entry("127.0.0.1", 2201), entry("127.0.0.1", 2202), entry("localhost")};
  o.np = 3;
  o.command = {"true"};
  o.stdin_rank = -1;
  o.ssh_port = 2222;
  Job job(io, std::move(o), Launchers{local, remote}, sink, diag);
  EXPECT_EQ(job.run(), 1);
  std::string text;
  ::lseek(fd, 0, SEEK_SET);
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  ::close(fd);
  EXPECT_NE(text.find("ssh asked for 127.0.0.1:2201"), std::string::npos) << text;
  EXPECT_NE(text.find("ssh asked for 127.0.0.1:2202"), std::string::npos) << text;
  EXPECT_NE(text.find("local asked for localhost:0"), std::string::npos) << text;
  EXPECT_NE(text.find("host 127.0.0.1:2201: ranks 0..0, SSH (local address, but the entry "
                      "names its own port 2201)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("host localhost: ranks 2..2, local, no SSH (this machine; the global "
                      "SSH port 2222 does not apply to it)\n"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace ferry
