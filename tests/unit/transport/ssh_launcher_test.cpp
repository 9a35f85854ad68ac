// SshLauncher against a real, private sshd (ssh_launcher_fixture.hpp): the stream through
// a link, parallel opens, the end of a link, cancelling and keepalives.

#include <gtest/gtest.h>
#include <netinet/tcp.h>

#include "ssh_launcher_fixture.hpp"

namespace ferry {
namespace {

using namespace ferry::test;

TEST_P(SshLauncherTest, EchoesOneMegabyteByteExact) {
  asio::io_context io;
  SshLauncher launcher(io, options(make_config(known_line("host_key"))));
  std::string error;
  auto link = open(io, launcher, host("h1"), ferryd(), &error);
  ASSERT_TRUE(link) << error;
  EXPECT_EQ(link->peer_address(), "127.0.0.1");
  EXPECT_EQ(link->describe(), "h1:" + std::to_string(port_));

  std::string sent(1 << 20, '\0');
  std::mt19937 rng(42);
  for (char& c : sent) c = static_cast<char>(rng());
  std::string got;
  bool closed = false;
  link->start([&](std::string_view bytes) { got.append(bytes); },
              [&](const std::string&) { closed = true; });
  for (size_t off = 0; off < sent.size(); off += 100000) {
    link->send(sent.substr(off, 100000));
  }
  ASSERT_TRUE(run_until(
      io, [&] { return got.size() >= sent.size() || closed; }, 60s));
  EXPECT_FALSE(closed);
  EXPECT_TRUE(got == sent) << "echo differs; got " << got.size() << " bytes";
  link->close();
  link->close();  // safe twice
  link.reset();
  io.run_for(200ms);
}

// The client's socket to sshd has TCP_NODELAY: libssh sends a handshake's messages one
// send() each, and with Nagle on, a second message waits for the ACK of the first, which the
// server delays (40 ms on Linux) when it has nothing to send; several such waits made most
// of a launch. Checked on this process's own sockets to the test sshd.
TEST_P(SshLauncherTest, TheConnectionToSshdSendsWithoutNagle) {
  asio::io_context io;
  SshLauncher launcher(io, options(make_config(known_line("host_key"))));
  std::string error;
  auto link = open(io, launcher, host("h1"), ferryd(), &error);
  ASSERT_TRUE(link) << error;
  int to_sshd = 0;
  for (const auto& entry : fs::directory_iterator("/proc/self/fd")) {
    int fd = std::atoi(entry.path().filename().c_str());
    sockaddr_in peer{};
    socklen_t len = sizeof(peer);
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0 ||
        peer.sin_family != AF_INET || ntohs(peer.sin_port) != port_)
      continue;
    ++to_sshd;
    int nodelay = 0;
    socklen_t optlen = sizeof(nodelay);
    ASSERT_EQ(getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, &optlen), 0);
    EXPECT_EQ(nodelay, 1) << "fd " << fd << " to sshd sends with Nagle on";
  }
  EXPECT_EQ(to_sshd, 1) << "one connection to the test sshd expected";
  link->close();
  link.reset();
  io.run_for(100ms);
}

TEST_P(SshLauncherTest, FourHostsOpenInParallel) {
  asio::io_context io;
  SshLauncher launcher(io, options(make_config(known_line("host_key"))));
  std::vector<std::unique_ptr<Link>> links(4);
  std::vector<std::string> errors(4), echoes(4);
  int done = 0;
  for (int i = 0; i < 4; ++i) {
    launcher.async_open(host("h" + std::to_string(i + 1)), DaemonCommand{ferryd()},
                        [&, i](Result<std::unique_ptr<Link>> r) {
                          ++done;
                          if (r) {
                            links[i] = std::move(r.value());
                          } else {
                            errors[i] = r.error().message;
                          }
                        });
  }
  ASSERT_TRUE(run_until(io, [&] { return done == 4; }));
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(links[i]) << errors[i];
    links[i]->start([&, i](std::string_view b) { echoes[i].append(b); }, [](const std::string&) {});
    links[i]->send("hello from h" + std::to_string(i + 1) + "\n");
  }
  ASSERT_TRUE(run_until(io, [&] {
    for (auto& e : echoes)
      if (e.empty() || e.back() != '\n') return false;
    return true;
  }));
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(echoes[i], "hello from h" + std::to_string(i + 1) + "\n");
    EXPECT_EQ(links[i]->describe(), "h" + std::to_string(i + 1) + ":" + std::to_string(port_));
  }
}

TEST_P(SshLauncherTest, ExitStatusAndStderrEndTheStream) {
  asio::io_context io;
  SshLauncher launcher(io, options(make_config(known_line("host_key"))));
  std::string error;
  auto link = open(io, launcher, host("h2"), (dir_ / "exit3").string(), &error);
  ASSERT_TRUE(link) << error;
  std::string reason = "<none>";
  link->start([](std::string_view) {}, [&](const std::string& r) { reason = r; });
  ASSERT_TRUE(run_until(io, [&] { return reason != "<none>"; }));
  EXPECT_EQ(reason, "ferryd exited with status 3: boom");
  EXPECT_EQ(diag_, (std::vector<std::string>{"h2: starting", "h2: boom"}));

  auto clean = open(io, launcher, host("h2"), (dir_ / "exit0").string(), &error);
  ASSERT_TRUE(clean) << error;
  reason = "<none>";
  clean->start([](std::string_view) {}, [&](const std::string& r) { reason = r; });
  ASSERT_TRUE(run_until(io, [&] { return reason != "<none>"; }));
  EXPECT_EQ(reason, "");
}

TEST_P(SshLauncherTest, CloseFlushesQueuedBytesAndEof) {
  asio::io_context io;
  SshLauncher launcher(io, options(make_config(known_line("host_key"))));
  std::string error;
  auto link = open(io, launcher, host("h3"), (dir_ / "until_eof").string(), &error);
  ASSERT_TRUE(link) << error;
  bool called = false;
  link->start([&](std::string_view) { called = true; }, [&](const std::string&) { called = true; });
  link->send(std::string(300000, 'x'));
  link.reset();  // closes with bytes still queued: they and the EOF must still go out
  fs::path marker = dir_ / "eof_seen";
  EXPECT_TRUE(run_until(
      io, [&] { return fs::exists(marker); }, 20s));
  std::string count = read_text(marker);
  EXPECT_EQ(std::atoi(count.c_str()), 300000) << count;
  EXPECT_FALSE(called) << "no callbacks after close()";
  // Once ferryd has gone, the lingering session leaves the io_context idle.
  io.restart();
  auto start = std::chrono::steady_clock::now();
  io.run_for(10s);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 6s);
}

TEST_P(SshLauncherTest, CancelAllFailsOpensInFlight) {
  asio::io_context io;
  SshLauncher launcher(io, options(make_config(known_line("host_key"))));
  std::string error;
  bool done = false;
  launcher.async_open(host("h1"), DaemonCommand{ferryd()}, [&](Result<std::unique_ptr<Link>> r) {
    done = true;
    if (!r) error = r.error().message;
  });
  launcher.cancel_all();
  ASSERT_TRUE(run_until(io, [&] { return done; }));
  EXPECT_EQ(error, prefix("h1") + "cancelled");
}

// Keepalive: an idle healthy link stays open; a frozen server is detected.
TEST_P(SshLauncherTest, KeepaliveDetectsAFrozenServer) {
  asio::io_context io;
  SshOptions o = options(make_config(known_line("host_key")));
  o.keepalive_s = 1;
  SshLauncher launcher(io, o);
  std::string error;
  auto link = open(io, launcher, host("h1"), ferryd(), &error);
  ASSERT_TRUE(link) << error;
  std::string reason = "<none>";
  link->start([](std::string_view) {}, [&](const std::string& r) { reason = r; });
  run_until(
      io, [&] { return reason != "<none>"; }, 4500ms);
  EXPECT_EQ(reason, "<none>") << "an idle link must survive keepalive";

  // Freeze the per-connection sshd processes (not the listener): no more answers.
  std::vector<pid_t> frozen = sshd_->freeze_sessions();
  ASSERT_FALSE(frozen.empty());
  EXPECT_TRUE(run_until(
      io, [&] { return reason != "<none>"; }, 8s));
  EXPECT_EQ(reason, "no answer to keepalive for 3 s");
  for (pid_t pid : frozen) kill(pid, SIGCONT);
}

INSTANTIATE_TEST_SUITE_P(SessionsOn, SshLauncherTest, ::testing::Values(-1, 2),
                         [](const ::testing::TestParamInfo<int>& p) {
                           return p.param < 0 ? std::string("Loop") : std::string("Threads");
                         });

}  // namespace
}  // namespace ferry
