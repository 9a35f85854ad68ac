#pragma once
/// \file
/// The fixture of the SshLauncher tests: a real, private sshd on 127.0.0.1 (see
/// ssh_test_server.hpp), ssh_configs naming it, and helpers to open links through it. Every
/// test runs twice: the sessions on the test's own loop, and on two I/O threads (the suite
/// is instantiated once, in ssh_launcher_test.cpp). Skipped unless root with /usr/sbin/sshd;
/// as root, an sshd that does not start fails them. FERRY_SSH_TEST_VERBOSE=1 prints the
/// launcher's progress lines with timestamps.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "ferry/transport/ssh_launcher.hpp"
#include "ssh_test_server.hpp"

namespace ferry::test {

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

}  // namespace ferry::test
