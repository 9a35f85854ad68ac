// An SSH link whose reading is paused (the console fell behind) against a real, private
// sshd on 127.0.0.1 (see ssh_test_server.hpp): ferryd's output stops within the channel's
// window, so ferryd is held back, the keepalive still gets its answers, and once resumed
// every byte arrives in order and the stream ends cleanly.

#include <gtest/gtest.h>

#include <string>

#include "ferry/transport/ssh_launcher.hpp"
#include "ssh_test_server.hpp"

namespace ferry {
namespace {

using namespace ferry::test;

std::string expected_output(int lines) {
  std::string s;
  for (int i = 1; i <= lines; ++i) s += std::to_string(i) + "\n";
  return s;
}

TEST(SshPause, PausedLinkHoldsFerrydBackAndLosesNothing) {
  if (std::string why = TestSshd::unavailable(); !why.empty()) GTEST_SKIP() << why;
  unsetenv("SSH_AUTH_SOCK");
  TestSshd sshd;
  ASSERT_EQ(sshd.start(), "");
  const fs::path& d = sshd.dir();
  // About 6.9 MB: far more than the channel window and the pipes on the way hold.
  constexpr int kLines = 1000000;
  const fs::path poured = d / "poured";
  write_text(d / "pour",
             "#!/bin/sh\nseq 1 " + std::to_string(kLines) + "\ntouch " + poured.string() + "\n",
             fs::perms::owner_all);
  write_text(d / "known_hosts", sshd.known_line("host_key"));
  write_text(d / "ssh_config", "Host h1\n  HostName 127.0.0.1\n  Port " +
                                   std::to_string(sshd.port()) + "\n  User root\n  IdentityFile " +
                                   (d / "id_main").string() + "\n  UserKnownHostsFile " +
                                   (d / "known_hosts").string() + "\n");
  asio::io_context io;
  SshOptions o;
  o.config_file = (d / "ssh_config").string();
  o.keepalive_s = 1;
  SshLauncher launcher(io, o);
  HostEntry host;
  host.name = "h1";
  std::unique_ptr<Link> link;
  std::string error = "<none>";
  launcher.async_open(host, DaemonCommand{(d / "pour").string()},
                      [&](Result<std::unique_ptr<Link>> r) {
                        if (r)
                          link = std::move(r.value());
                        else
                          error = r.error().message;
                      });
  ASSERT_TRUE(run_until(io, [&] { return link || error != "<none>"; }));
  ASSERT_TRUE(link) << error;

  std::string got;
  std::string reason = "<none>";
  link->start([&](std::string_view b) { got.append(b); },
              [&](const std::string& r) { reason = r; });
  link->pause_reading();
  // Over three keepalive intervals: a paused link must not look dead.
  run_until(
      io, [&] { return reason != "<none>"; }, std::chrono::milliseconds(3500));
  EXPECT_EQ(reason, "<none>") << "the paused link ended";
  EXPECT_EQ(got.size(), 0u) << "bytes delivered while paused";
  EXPECT_FALSE(fs::exists(poured)) << "ferryd was not held back";

  link->resume_reading();
  ASSERT_TRUE(run_until(
      io, [&] { return reason != "<none>"; }, std::chrono::seconds(30)));
  EXPECT_EQ(reason, "");
  EXPECT_TRUE(fs::exists(poured));
  EXPECT_EQ(got.size(), expected_output(kLines).size());
  EXPECT_TRUE(got == expected_output(kLines)) << "bytes lost or out of order";
}

}  // namespace
}  // namespace ferry
