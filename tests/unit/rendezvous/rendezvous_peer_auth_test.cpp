#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "fake_peer_identifier.hpp"
#include "ferry/rendezvous/peer_auth.hpp"

namespace ferry {
namespace {

namespace fs = std::filesystem;

// ---- PeerAuthenticator over the fake -------------------------------------------------------

TEST(PeerAuthenticator, AcceptsOnlyTheJobSecret) {
  test_support::FakePeerIdentifier ids;
  ids.add_peer(5000, 100);
  ids.set_environment(100, {"PATH=/bin", "FERRY_JOB_SECRET=abc123"});
  ids.add_peer(5001, 101);
  ids.set_environment(101, {"FERRY_JOB_SECRET=abc124"});
  ids.add_peer(5002, 102);
  ids.set_environment(102, {"HOME=/root"});
  ids.add_peer(5003, 103);  // environ unreadable (another user)
  ids.add_peer(5004, 104);
  ids.set_environment(104, {"FERRY_JOB_SECRET=abc1234"});
  PeerAuthenticator auth(ids, "abc123");
  TcpConnection c;
  c.server_port = 40000;
  c.client_port = 5000;
  auto ok = auth.authenticate(c);
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(*ok, 100);
  for (uint16_t port : {5001, 5002, 5003, 5004, 5999}) {
    c.client_port = port;
    EXPECT_FALSE(auth.authenticate(c)) << port;
  }
  c.client_port = 5002;
  EXPECT_NE(auth.authenticate(c).error().message.find("not a rank of this job"), std::string::npos);
  c.client_port = 5000;
  c.client_addr = 0x0a000001;  // 10.0.0.1: never from the network
  EXPECT_FALSE(auth.authenticate(c));
  PeerAuthenticator none(ids, "");
  c.client_addr = 0x7f000001;
  EXPECT_FALSE(none.authenticate(c));
}

TEST(JobSecret, IsLongRandomHex) {
  auto a = new_job_secret(), b = new_job_secret();
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->size(), 64u);
  EXPECT_EQ(a->find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(*a, *b);
}

// ---- ProcPeerIdentifier over a made-up /proc ------------------------------------------------

class FakeProc : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ferry-proc-XXXXXX";
    ASSERT_TRUE(::mkdtemp(tmpl));
    root_ = tmpl;
    fs::create_directories(root_ / "net");
  }
  void TearDown() override { fs::remove_all(root_); }

  void write(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
  }
  // A process with fds linking to sockets, an environ, and children.
  void process(int pid, std::vector<uint64_t> sockets, const std::string& environ,
               const std::string& children = "") {
    fs::path d = root_ / std::to_string(pid);
    fs::create_directories(d / "fd");
    int fd = 3;
    for (auto inode : sockets)
      fs::create_symlink("socket:[" + std::to_string(inode) + "]", d / "fd" / std::to_string(fd++));
    fs::create_symlink("/dev/null", d / "fd" / "0");
    write(d / "environ", environ);
    write(d / "task" / std::to_string(pid) / "children", children);
  }
  // net/tcp with the client socket 127.0.0.1:port -> 127.0.0.1:server and the server's
  // accepted socket the other way round (which must not be mistaken for the client).
  void tcp_table(uint16_t client_port, uint16_t server_port, uint64_t client_inode,
                 uint64_t server_inode) {
    char line[512];
    std::string t =
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
        "timeout inode\n";
    std::snprintf(line, sizeof line,
                  "   0: 0100007F:%04X 0100007F:%04X 01 00000000:00000000 00:00000000 "
                  "00000000  %5u        0 %llu 1 0000000000000000 20 4 30 10 -1\n",
                  server_port, client_port, ::getuid(),
                  static_cast<unsigned long long>(server_inode));
    t += line;
    std::snprintf(line, sizeof line,
                  "   1: 0100007F:%04X 0100007F:%04X 01 00000000:00000000 00:00000000 "
                  "00000000  %5u        0 %llu 1 0000000000000000 20 4 30 10 -1\n",
                  client_port, server_port, ::getuid(),
                  static_cast<unsigned long long>(client_inode));
    t += line;
    write(root_ / "net" / "tcp", t);
  }
  fs::path root_;
};

TEST_F(FakeProc, FindsTheClientThroughTheRanksTree) {
  tcp_table(51000, 40000, 777, 778);
  process(10, {}, std::string("FERRY_JOB_SECRET=s\0", 19), "11 ");
  process(11, {777}, std::string("A=1\0FERRY_JOB_SECRET=s\0", 23));
  process(20, {778}, "");  // ferryd itself holds the server end
  ProcPeerIdentifier ids(root_.string());
  ids.set_candidates({10});
  TcpConnection c;
  c.client_port = 51000;
  c.server_port = 40000;
  auto pid = ids.peer_pid(c);
  ASSERT_TRUE(pid) << pid.error().message;
  EXPECT_EQ(*pid, 11);
  EXPECT_EQ(ids.last_path(), "ranks");
  auto env = ids.environment(11);
  ASSERT_TRUE(env);
  EXPECT_EQ(*env, (std::vector<std::string>{"A=1", "FERRY_JOB_SECRET=s"}));
  // Second time it is found among the recent pids.
  ASSERT_TRUE(ids.peer_pid(c));
  EXPECT_EQ(ids.last_path(), "recent");
  PeerAuthenticator auth(ids, "s");
  EXPECT_TRUE(auth.authenticate(c));
}

TEST_F(FakeProc, FallsBackToScanningTheUsersProcesses) {
  tcp_table(51001, 40000, 900, 901);
  process(30, {900}, std::string("FERRY_JOB_SECRET=other\0", 23));
  ProcPeerIdentifier ids(root_.string());
  TcpConnection c;
  c.client_port = 51001;
  c.server_port = 40000;
  auto pid = ids.peer_pid(c);
  ASSERT_TRUE(pid) << pid.error().message;
  EXPECT_EQ(*pid, 30);
  EXPECT_EQ(ids.last_path(), "scan");
  PeerAuthenticator auth(ids, "s");
  auto r = auth.authenticate(c);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("another job"), std::string::npos);
}

TEST_F(FakeProc, UnknownOrClosedSocketsAreRefused) {
  tcp_table(51002, 40000, 0, 5);  // client inode 0: closed, TIME_WAIT
  ProcPeerIdentifier ids(root_.string());
  TcpConnection c;
  c.client_port = 51002;
  c.server_port = 40000;
  auto r = ids.peer_pid(c);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("closed"), std::string::npos);
  c.client_port = 51003;
  EXPECT_FALSE(ids.peer_pid(c));
  c.client_port = 51002;
  tcp_table(51002, 40000, 4242, 5);  // a socket nobody in this tree holds
  auto none = ids.peer_pid(c);
  ASSERT_FALSE(none);
  // Looked up twice before giving up; the message says which socket it was.
  EXPECT_NE(none.error().message.find("socket inode 4242, then 4242 looked up again"),
            std::string::npos)
      << none.error().message;
}

TEST_F(FakeProc, ReadsIpv4MappedEntriesOfTcp6) {
  write(root_ / "net" / "tcp",
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
        "timeout inode\n");
  char line[512];
  std::snprintf(line, sizeof line,
                "header\n   0: 0000000000000000FFFF00000100007F:C738 "
                "0000000000000000FFFF00000100007F:9C40 01 00000000:00000000 00:00000000 "
                "00000000  %5u        0 555 1 0000000000000000 20 4 30 10 -1\n",
                ::getuid());
  write(root_ / "net" / "tcp6", line);
  process(40, {555}, "");
  ProcPeerIdentifier ids(root_.string());
  TcpConnection c;
  c.client_port = 0xC738;
  c.server_port = 0x9C40;
  auto pid = ids.peer_pid(c);
  ASSERT_TRUE(pid) << pid.error().message;
  EXPECT_EQ(*pid, 40);
}

// ---- The real /proc ---------------------------------------------------------------------------

struct Listener {
  int fd = -1;
  uint16_t port = 0;
  Listener() {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(fd, 64);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~Listener() { ::close(fd); }
  // Accepts one connection and describes it as ferryd would.
  TcpConnection accept_one(int& conn_fd) {
    sockaddr_in peer{};
    socklen_t len = sizeof peer;
    conn_fd = ::accept4(fd, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_CLOEXEC);
    TcpConnection c;
    c.client_addr = ntohl(peer.sin_addr.s_addr);
    c.client_port = ntohs(peer.sin_port);
    c.server_port = port;
    return c;
  }
};

int connect_to(uint16_t port) {
  int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  if (::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(s);
    return -1;
  }
  return s;
}

TEST(RealProc, IdentifiesThisProcessAsThePeerAndRefusesIt) {
  Listener l;
  int client = connect_to(l.port);
  ASSERT_GE(client, 0);
  int conn = -1;
  TcpConnection c = l.accept_one(conn);
  ProcPeerIdentifier ids;
  auto pid = ids.peer_pid(c);
  ASSERT_TRUE(pid) << pid.error().message;
  EXPECT_EQ(*pid, ::getpid());
  // This test binary was not started with the secret.
  PeerAuthenticator auth(ids, "0123456789abcdef");
  EXPECT_FALSE(auth.authenticate(c));
  ::close(client);
  ::close(conn);
}

TEST(RealProc, AuthenticatesAChildStartedWithTheSecretAndMeasuresTheCost) {
  if (::access("/bin/bash", X_OK) != 0) GTEST_SKIP() << "no /bin/bash";
  Listener l;
  auto secret = new_job_secret();
  ASSERT_TRUE(secret);
  // A "rank": bash started with the secret, connecting with its /dev/tcp redirection, then
  // blocked in a builtin read (an exec right after connecting would race with the lookup).
  std::string script =
      "exec 3<>/dev/tcp/127.0.0.1/" + std::to_string(l.port) + "; read -r line <&3";
  std::string env_secret = std::string(kJobSecretVar) + "=" + *secret;
  char* argv[] = {const_cast<char*>("bash"), const_cast<char*>("-c"), script.data(), nullptr};
  char* envp[] = {env_secret.data(), const_cast<char*>("PATH=/usr/bin:/bin"), nullptr};
  pid_t child = ::fork();
  if (child == 0) {
    ::execve("/bin/bash", argv, envp);
    ::_exit(127);
  }
  int conn = -1;
  TcpConnection c = l.accept_one(conn);
  ASSERT_GE(conn, 0);

  ProcPeerIdentifier ids;
  ids.set_candidates({child});
  PeerAuthenticator auth(ids, *secret);
  auto pid = auth.authenticate(c);
  ASSERT_TRUE(pid) << pid.error().message;
  EXPECT_EQ(*pid, child);
  PeerAuthenticator wrong(ids, std::string(64, '0'));
  EXPECT_FALSE(wrong.authenticate(c));

  // Cost per connection: informational, not asserted (machines differ).
  using Clock = std::chrono::steady_clock;
  auto time_it = [&](ProcPeerIdentifier& who, int n) {
    auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) {
      auto r = PeerAuthenticator(who, *secret).authenticate(c);
      EXPECT_TRUE(r) << r.error().message << " (path " << who.last_path() << ")";
    }
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / n;
  };
  double warm = time_it(ids, 200);  // netlink lookup, found among recent pids
  double ranks = 0, scan = 0, tables = 0;
  for (int i = 0; i < 20; ++i) {
    ProcPeerIdentifier fresh;
    fresh.set_candidates({child});
    ranks += time_it(fresh, 1);
    ProcPeerIdentifier blind;
    scan += time_it(blind, 1);
    ProcPeerIdentifier no_netlink;
    no_netlink.use_sock_diag(false);
    no_netlink.set_candidates({child});
    tables += time_it(no_netlink, 1);
  }
  std::printf(
      "[ bench    ] peer authentication per connection: recent pid %.1f us, "
      "rank tree %.1f us, full /proc scan %.1f us; with /proc/net/tcp instead of "
      "netlink %.1f us\n",
      warm, ranks / 20, scan / 20, tables / 20);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ::close(conn);
}

}  // namespace
}  // namespace ferry
