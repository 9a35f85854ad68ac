// SshLauncher against a real, private sshd on 127.0.0.1 (see ssh_test_server.hpp).
// Skipped unless root with /usr/sbin/sshd; as root, an sshd that does not start fails them.
// FERRY_SSH_TEST_VERBOSE=1 prints the launcher's progress lines with timestamps.

#include "ferry/transport/ssh_launcher.hpp"

#include <gtest/gtest.h>
#include <netinet/tcp.h>

#include <cstdio>

#include "ferry/transport/ssh_config_scan.hpp"
#include "ssh_test_server.hpp"

namespace ferry {
namespace {

using namespace ferry::test;

// Every test twice: the sessions on the test's own loop, and on two I/O threads.
class SshLauncherTest : public ::testing::TestWithParam<int> {
 protected:
  static void SetUpTestSuite() {
    unsetenv("SSH_AUTH_SOCK");  // only the keys of this test
    sshd_ = new TestSshd;
    skip_reason_ = TestSshd::unavailable();
    if (skip_reason_.empty()) start_error_ = sshd_->start();
    if (skip_reason_.empty() && start_error_.empty()) {
      const fs::path& d = sshd_->dir();
      write_text(d / "fake_ferryd", "#!/bin/sh\nexec cat\n", fs::perms::owner_all);
      write_text(d / "exit3", "#!/bin/sh\necho starting >&2\necho boom >&2\nexit 3\n",
                 fs::perms::owner_all);
      write_text(d / "exit0", "#!/bin/sh\nexit 0\n", fs::perms::owner_all);
      write_text(d / "until_eof",
                 "#!/bin/sh\nwc -c > " + (d / "eof_seen.tmp").string() + " && mv " +
                     (d / "eof_seen.tmp").string() + " " + (d / "eof_seen").string() + "\n",
                 fs::perms::owner_all);
    }
    dir_ = sshd_->dir();
    port_ = sshd_->port();
  }

  static void TearDownTestSuite() {
    delete sshd_;
    sshd_ = nullptr;
  }

  void SetUp() override {
    if (!skip_reason_.empty()) GTEST_SKIP() << skip_reason_;
    if (!start_error_.empty()) FAIL() << start_error_;
  }

  static std::string known_line(const std::string& key) { return sshd_->known_line(key); }

  // Writes a fresh ssh_config + known_hosts pair; returns the config path.
  fs::path make_config(const std::string& known_hosts_text, const std::string& extra = "") {
    ++configs_;
    fs::path kh = dir_ / ("known_hosts_" + std::to_string(configs_));
    known_hosts_ = kh;
    if (!known_hosts_text.empty()) write_text(kh, known_hosts_text);
    std::string p = std::to_string(port_);
    std::string common = "  HostName 127.0.0.1\n  UserKnownHostsFile " + kh.string() + "\n";
    std::string text =
        extra + "Host h1 h2 h3 h4\n" + common + "  Port " + p + "\n  User root\n  IdentityFile " +
        (dir_ / "id_main").string() +
        "\n"
        "Host alias\n" +
        common + "  Port " + p + "\n  User root\n  IdentityFile " + (dir_ / "id_alt").string() +
        "\n"
        "Host badport\n" +
        common + "  Port 1\n  User root\n  IdentityFile " + (dir_ / "id_main").string() +
        "\n"
        "Host wronguser\n" +
        common + "  Port " + p + "\n  User nosuchuser\n  IdentityFile " +
        (dir_ / "id_main").string() +
        "\n"
        "Host noid\n" +
        common + "  Port " + p + "\n  User root\n";
    fs::path cfg = dir_ / ("ssh_config_" + std::to_string(configs_));
    write_text(cfg, text);
    return cfg;
  }

  SshOptions options(const fs::path& config) {
    SshOptions o;
    o.config_file = config.string();
    o.connect_timeout_s = 10;
    o.io_threads = GetParam();
    if (std::getenv("FERRY_SSH_TEST_VERBOSE")) {
      o.verbose = true;
      o.log = [t0 = std::chrono::steady_clock::now()](const std::string& line) {
        auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - t0)
                      .count();
        std::fprintf(stderr, "[%6lld ms] %s\n", static_cast<long long>(ms), line.c_str());
      };
    }
    return o;
  }

  // Opens one link; returns it or the error text in `error`.
  std::unique_ptr<Link> open(asio::io_context& io, SshLauncher& launcher, HostEntry host,
                             const std::string& ferryd, std::string* error) {
    bool done = false;
    std::unique_ptr<Link> link;
    DaemonCommand cmd{ferryd, [this, name = host.name](const std::string& line) {
                        diag_.push_back(name + ": " + line);
                      }};
    launcher.async_open(host, cmd, [&](Result<std::unique_ptr<Link>> r) {
      done = true;
      if (r) {
        link = std::move(r.value());
      } else {
        *error = r.error().message;
      }
    });
    EXPECT_FALSE(done) << "handler must not run inside async_open";
    EXPECT_TRUE(run_until(io, [&] { return done; }));
    return link;
  }

  static HostEntry host(const std::string& name, int port = 0, const std::string& user = "") {
    HostEntry h;
    h.name = name;
    h.port = port;
    h.user = user;
    return h;
  }

  std::string ferryd() const { return (dir_ / "fake_ferryd").string(); }
  std::string prefix(const std::string& name) const {
    return name + ":" + std::to_string(port_) + ": ";
  }

  static inline TestSshd* sshd_ = nullptr;
  static inline fs::path dir_;
  static inline int port_ = 0;
  static inline std::string skip_reason_;  // no sshd can run here
  static inline std::string start_error_;  // it could, but did not start
  static inline int configs_ = 0;
  fs::path known_hosts_;
  std::vector<std::string> diag_;
};

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

TEST_P(SshLauncherTest, UnknownHostKeyIsRefusedWithFingerprint) {
  asio::io_context io;
  SshLauncher launcher(io, options(make_config("")));
  std::string error;
  auto link = open(io, launcher, host("h1"), ferryd(), &error);
  EXPECT_FALSE(link);
  EXPECT_TRUE(error.starts_with(prefix("h1") + "unknown host key SHA256:")) << error;
  EXPECT_NE(error.find("ssh-keyscan -p " + std::to_string(port_) + " 127.0.0.1 >> "),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("--ssh-accept-new"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos);
}

TEST_P(SshLauncherTest, AcceptNewRecordsTheKey) {
  asio::io_context io;
  SshOptions o = options(make_config(""));
  o.accept_new_host_keys = true;
  std::vector<std::string> log;
  o.verbose = true;
  o.log = [&](const std::string& line) { log.push_back(line); };
  {
    SshLauncher launcher(io, o);
    std::string error;
    ASSERT_TRUE(open(io, launcher, host("h1"), ferryd(), &error)) << error;
  }
  EXPECT_NE(read_text(known_hosts_).find("[127.0.0.1]:" + std::to_string(port_)),
            std::string::npos);
  bool noted = false;
  for (auto& l : log) noted |= l.find("added host key SHA256:") != std::string::npos;
  EXPECT_TRUE(noted);
  // The recorded key is trusted afterwards without the flag.
  o.accept_new_host_keys = false;
  SshLauncher again(io, o);
  std::string error;
  EXPECT_TRUE(open(io, again, host("h2"), ferryd(), &error)) << error;
}

TEST_P(SshLauncherTest, StrictHostKeyCheckingAcceptNewInConfig) {
  asio::io_context io;
  const std::string block = "Host h3\n  StrictHostKeyChecking accept-new\n";
  SshLauncher launcher(io, options(make_config("", block)));
  std::string error;
  EXPECT_TRUE(open(io, launcher, host("h3"), ferryd(), &error)) << error;
  EXPECT_NE(read_text(known_hosts_).find("[127.0.0.1]"), std::string::npos);
  // Only for the hosts of that block.
  SshLauncher other(io, options(make_config("", block)));
  error.clear();
  EXPECT_FALSE(open(io, other, host("h4"), ferryd(), &error));
  EXPECT_NE(error.find("unknown host key"), std::string::npos) << error;
}

TEST_P(SshLauncherTest, ChangedHostKeyIsAlwaysRefused) {
  asio::io_context io;
  SshOptions o = options(make_config(known_line("other_host_key")));
  o.accept_new_host_keys = true;
  SshLauncher launcher(io, o);
  std::string error;
  EXPECT_FALSE(open(io, launcher, host("h1"), ferryd(), &error));
  EXPECT_TRUE(error.starts_with(prefix("h1") + "host key CHANGED (fingerprint SHA256:")) << error;
  EXPECT_NE(error.find(known_hosts_.string()), std::string::npos) << error;
}

TEST_P(SshLauncherTest, WrongPortGivesOneLineConnectError) {
  int closed_port = 0;
  ::close(listen_socket(0, &closed_port));
  asio::io_context io;
  SshLauncher launcher(io, options(make_config(known_line("host_key"))));
  std::string error;
  EXPECT_FALSE(open(io, launcher, host("h1", closed_port), ferryd(), &error));
  EXPECT_EQ(error, "h1:" + std::to_string(closed_port) + ": cannot connect: Connection refused");
}

TEST_P(SshLauncherTest, SilentServerTimesOut) {
  int port = 0;
  int fd = listen_socket(0, &port);  // accepts TCP, never says a word
  asio::io_context io;
  SshOptions o = options(make_config(known_line("host_key")));
  o.connect_timeout_s = 1;
  SshLauncher launcher(io, o);
  std::string error;
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(open(io, launcher, host("h1", port), ferryd(), &error));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_TRUE(error.starts_with("h1:" + std::to_string(port) + ": connection timed out after 1 s"))
      << error;
  ::close(fd);
}

TEST_P(SshLauncherTest, MissingFerrydIsReportedAsNotFound) {
  asio::io_context io;
  SshLauncher launcher(io, options(make_config(known_line("host_key"))));
  std::string error;
  auto link = open(io, launcher, host("h1"), "/nonexistent/dir/ferryd", &error);
  ASSERT_TRUE(link) << error;
  std::string reason = "<none>";
  link->start([](std::string_view) {}, [&](const std::string& r) { reason = r; });
  ASSERT_TRUE(run_until(io, [&] { return reason != "<none>"; }));
  EXPECT_TRUE(reason.starts_with("ferryd not found at /nonexistent/dir/ferryd")) << reason;
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

TEST_P(SshLauncherTest, UnresolvableHostName) {
  asio::io_context io;
  SshLauncher launcher(io,
                       options(make_config("", "Host nxhost\n  HostName nonexistent.invalid\n")));
  std::string error;
  EXPECT_FALSE(open(io, launcher, host("nxhost"), ferryd(), &error));
  EXPECT_TRUE(error.starts_with("nxhost:22: cannot connect: ")) << error;
  EXPECT_NE(error.find("nonexistent.invalid"), std::string::npos) << error;
}

TEST_P(SshLauncherTest, ConfigAliasWithPortUserIdentityFile) {
  asio::io_context io;
  SshLauncher launcher(io, options(make_config(known_line("host_key"))));
  std::string error;
  // HostName, Port, User, IdentityFile and UserKnownHostsFile all come from the config.
  auto link = open(io, launcher, host("alias"), ferryd(), &error);
  ASSERT_TRUE(link) << error;
  EXPECT_EQ(link->describe(), "alias:" + std::to_string(port_));
}

TEST_P(SshLauncherTest, CommandLineOverridesConfig) {
  asio::io_context io;
  SshLauncher launcher(io, options(make_config(known_line("host_key"))));
  std::string error;
  // Config says Port 1; the host entry's port wins (ssh_connect must not re-read config).
  EXPECT_TRUE(open(io, launcher, host("badport", port_), ferryd(), &error)) << error;
  // Config says User nosuchuser: honoured, and overridden by the host entry.
  error.clear();
  EXPECT_FALSE(open(io, launcher, host("wronguser"), ferryd(), &error));
  EXPECT_EQ(error, prefix("wronguser") + "authentication failed (publickey) for user nosuchuser");
  error.clear();
  EXPECT_TRUE(open(io, launcher, host("wronguser", 0, "root"), ferryd(), &error)) << error;
  // default_port (-p) beats the config's Port, as with ssh; the entry's port beats both.
  SshOptions o = options(make_config(known_line("host_key")));
  o.default_port = port_;
  SshLauncher with_default(io, o);
  error.clear();
  EXPECT_TRUE(open(io, with_default, host("badport"), ferryd(), &error)) << error;
  o.default_port = 1;
  SshLauncher entry_wins(io, o);
  error.clear();
  EXPECT_TRUE(open(io, entry_wins, host("h1", port_), ferryd(), &error)) << error;
}

TEST_P(SshLauncherTest, IdentityFileOption) {
  asio::io_context io;
  SshOptions o = options(make_config(known_line("host_key")));
  {
    SshLauncher launcher(io, o);
    std::string error;
    EXPECT_FALSE(open(io, launcher, host("noid"), ferryd(), &error));
    EXPECT_EQ(error, prefix("noid") + "authentication failed (publickey) for user root");
  }
  o.identity_file = (dir_ / "id_alt").string();
  SshLauncher launcher(io, o);
  std::string error;
  EXPECT_TRUE(open(io, launcher, host("noid"), ferryd(), &error)) << error;
  o.identity_file = (dir_ / "missing_key").string();
  SshLauncher missing(io, o);
  error.clear();
  EXPECT_FALSE(open(io, missing, host("noid"), ferryd(), &error));
  EXPECT_EQ(error, prefix("noid") + "cannot read identity file " + o.identity_file);
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

// ---- no sshd needed ---------------------------------------------------------------------

TEST(SshShellQuote, QuotesForSh) {
  EXPECT_EQ(shell_quote("/opt/ferry/bin/ferryd"), "'/opt/ferry/bin/ferryd'");
  EXPECT_EQ(shell_quote("/a b/it's"), "'/a b/it'\\''s'");
}

TEST(SshConfigScan, FindsTheFirstValueForTheAlias) {
  char tmpl[] = "/tmp/ferry-ssh-config-XXXXXX";
  fs::path dir = mkdtemp(tmpl);
  write_text(dir / "extra.conf", "Host inc*\n  StrictHostKeyChecking=no\n");
  write_text(dir / "config",
             "# comment\n"
             "Host web? !web9\n"
             "  HostName 10.0.0.1\n"
             "  StrictHostKeyChecking accept-new\n"
             "Host *\n"
             "  Include " +
                 (dir / "extra.conf").string() +
                 "\n"
                 "Host web*\n"
                 "  stricthostkeychecking yes\n"
                 "Match all\n"
                 "  StrictHostKeyChecking ask\n");
  std::string cfg = (dir / "config").string();
  EXPECT_EQ(ssh_config_value(cfg, "web1", "StrictHostKeyChecking"), "accept-new");
  EXPECT_EQ(ssh_config_value(cfg, "WEB1", "stricthostkeychecking"), "accept-new");
  EXPECT_EQ(ssh_config_value(cfg, "web9", "StrictHostKeyChecking"), "yes");  // negated
  EXPECT_EQ(ssh_config_value(cfg, "web10", "StrictHostKeyChecking"), "yes");
  EXPECT_EQ(ssh_config_value(cfg, "include1", "StrictHostKeyChecking"), "no");
  EXPECT_EQ(ssh_config_value(cfg, "other", "StrictHostKeyChecking"), "ask");
  EXPECT_EQ(ssh_config_value(cfg, "web1", "User"), "");
  EXPECT_EQ(ssh_config_value((dir / "missing").string(), "web1", "HostName"), "");
  EXPECT_TRUE(strict_host_key_accepts_new("accept-new"));
  EXPECT_TRUE(strict_host_key_accepts_new("No"));
  EXPECT_FALSE(strict_host_key_accepts_new("yes"));
  EXPECT_FALSE(strict_host_key_accepts_new("ask"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ferry
