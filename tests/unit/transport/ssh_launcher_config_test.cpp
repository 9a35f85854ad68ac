// SshLauncher against a real, private sshd (ssh_launcher_fixture.hpp): host keys, what
// ssh_config and the command line choose, and one-line errors for hosts it cannot reach;
// then shell quoting and the config scan, which need no sshd.

#include <gtest/gtest.h>

#include "ferry/transport/ssh_config_scan.hpp"
#include "ssh_launcher_fixture.hpp"

namespace ferry {
namespace {

using namespace ferry::test;

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
