// An SSH link whose reading is held back against a real, private sshd on 127.0.0.1 (see
// ssh_test_server.hpp): paused (the console fell behind), or with the front end's loop
// not running at all while the session's I/O thread goes on. Either way ferryd's output
// stops within the channel's window and the batches on their way, so ferryd is held
// back; the keepalive still gets its answers; the held link does not spin; and once
// released every byte arrives in order and the stream ends cleanly.

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <string>
#include <thread>

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

// CPU seconds this process used so far, every thread (the session's I/O thread too).
double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// About 6.9 MB: far more than the channel window, the batches allowed on their way to the
// loop and the pipes on the way hold.
constexpr int kLines = 1000000;

// Every test twice: the session on the test's loop, and on an I/O thread of its own.
class SshHold : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (std::string why = TestSshd::unavailable(); !why.empty()) GTEST_SKIP() << why;
    unsetenv("SSH_AUTH_SOCK");
    ASSERT_EQ(sshd_.start(), "");
    const fs::path& d = sshd_.dir();
    poured_ = d / "poured";
    write_text(d / "pour",
               "#!/bin/sh\nseq 1 " + std::to_string(lines()) + "\ntouch " + poured_.string() + "\n",
               fs::perms::owner_all);
    write_text(d / "known_hosts", sshd_.known_line("host_key"));
    write_text(d / "ssh_config",
               "Host h1\n  HostName 127.0.0.1\n  Port " + std::to_string(sshd_.port()) +
                   "\n  User root\n  IdentityFile " + (d / "id_main").string() +
                   "\n  UserKnownHostsFile " + (d / "known_hosts").string() + "\n");
    SshOptions o;
    o.config_file = (d / "ssh_config").string();
    o.keepalive_s = 1;
    o.io_threads = GetParam();
    options(o);
    launcher_ = std::make_unique<SshLauncher>(io_, o);
    link_ = open();
    ASSERT_TRUE(link_);
  }

  // A link to ferryd (the script) on the test's sshd; null (and a failure) if it fails.
  std::unique_ptr<Link> open() {
    HostEntry host;
    host.name = "h1";
    std::string error = "<none>";
    std::unique_ptr<Link> link;
    launcher_->async_open(host, DaemonCommand{(sshd_.dir() / "pour").string()},
                          [&](Result<std::unique_ptr<Link>> r) {
                            if (r)
                              link = std::move(r.value());
                            else
                              error = r.error().message;
                          });
    EXPECT_TRUE(run_until(io_, [&] { return link || error != "<none>"; }));
    EXPECT_TRUE(link) << error;
    return link;
  }

  // The launcher's options, before it is made.
  virtual void options(SshOptions&) {}

  // How many lines ferryd (the script) prints.
  virtual int lines() const { return kLines; }

  void start() {
    link_->start(
        [this](std::string_view b) {
          got_.append(b);
          largest_ = std::max(largest_, b.size());
          if (pause_at_next_) {  // as the console does when it falls behind again
            pause_at_next_ = false;
            link_->pause_reading();
          }
        },
        [this](const std::string& r) { reason_ = r; });
  }

  // Once released: the rest arrives, byte for byte, and the stream ends cleanly.
  void expect_everything() {
    ASSERT_TRUE(run_until(
        io_, [&] { return reason_ != "<none>"; }, std::chrono::seconds(30)));
    EXPECT_EQ(reason_, "");
    EXPECT_TRUE(fs::exists(poured_));
    EXPECT_EQ(got_.size(), expected_output(lines()).size());
    EXPECT_TRUE(got_ == expected_output(lines())) << "bytes lost or out of order";
  }

  TestSshd sshd_;
  fs::path poured_;
  asio::io_context io_;
  std::unique_ptr<SshLauncher> launcher_;
  std::unique_ptr<Link> link_;
  std::string got_;
  std::size_t largest_ = 0;     // the largest batch handed on
  bool pause_at_next_ = false;  // the handler pauses the link at the next batch
  std::string reason_ = "<none>";
};

TEST_P(SshHold, PausedLinkHoldsFerrydBackAndLosesNothing) {
  start();
  // Paused mid-stream. What the session read before the pause took effect (on an I/O
  // thread it may have read the whole window already) is still delivered; then nothing.
  ASSERT_TRUE(run_until(io_, [&] { return !got_.empty(); }));
  link_->pause_reading();
  run_until(
      io_, [&] { return reason_ != "<none>"; }, std::chrono::milliseconds(300));
  const std::size_t at_pause = got_.size();
  const double cpu_before = cpu_seconds();
  // Over three keepalive intervals: a paused link must not look dead.
  run_until(
      io_, [&] { return reason_ != "<none>"; }, std::chrono::milliseconds(3500));
  EXPECT_EQ(reason_, "<none>") << "the paused link ended";
  EXPECT_EQ(got_.size(), at_pause) << "bytes delivered while paused";
  EXPECT_FALSE(fs::exists(poured_)) << "ferryd was not held back";
  // Waiting, not polling: a session that keeps finding its socket writable and its
  // reading paused would burn a core for the whole 3.5 s.
  EXPECT_LT(cpu_seconds() - cpu_before, 1.0) << "the paused link spun";

  link_->resume_reading();
  expect_everything();
}

// Output that fits the channel's first window (about 24 KB): ferryd prints it all and exits
// while the link is paused, so sshd closes the channel with the output still waiting in
// libssh. Frames sent meanwhile (heartbeats) go nowhere, and that is no reason to end the
// link: once resumed it delivers every byte, and then ends cleanly.
class SshHoldExited : public SshHold {
  int lines() const override { return 5000; }
};

TEST_P(SshHoldExited, FerrydThatExitedWhilePausedLosesNothing) {
  link_->pause_reading();
  start();
  ASSERT_TRUE(run_until(
      io_, [&] { return fs::exists(poured_); }, std::chrono::seconds(10)));
  // sshd's CLOSE arrives meanwhile; each send is a heartbeat to a ferryd that is gone.
  for (int i = 0; i < 10; ++i) {
    link_->send(std::string(17, 'h'));
    run_until(
        io_, [&] { return reason_ != "<none>"; }, std::chrono::milliseconds(100));
  }
  EXPECT_EQ(reason_, "<none>") << "the paused link ended";
  EXPECT_EQ(got_.size(), 0u) << "bytes delivered while paused";
  link_->resume_reading();
  expect_everything();
}

// Only on the loop (a session's thread reads on until kInFlight bytes wait for the loop):
// what libssh held while the link was paused, up to the channel's window, is handed on a
// batch at a time when reading goes on, so a handler that pauses again at once (the
// console behind again) gets one batch, not the whole window in one piece.
class SshHoldOnLoop : public SshHold {};

TEST_P(SshHoldOnLoop, LinkPausedAgainTakesOneBatch) {
  start();
  ASSERT_TRUE(run_until(io_, [&] { return !got_.empty(); }));
  link_->pause_reading();
  run_until(
      io_, [&] { return reason_ != "<none>"; }, std::chrono::milliseconds(1000));
  const std::size_t at_pause = got_.size();
  largest_ = 0;
  pause_at_next_ = true;
  link_->resume_reading();
  run_until(
      io_, [&] { return reason_ != "<none>"; }, std::chrono::milliseconds(1000));
  EXPECT_GT(got_.size(), at_pause) << "nothing came on resume";
  // One batch: 256 KiB, and the last 64 KiB read from libssh's buffer and a packet.
  EXPECT_LE(got_.size() - at_pause, std::size_t{400} << 10) << "more than a batch after the pause";
  EXPECT_LE(largest_, std::size_t{400} << 10);
  link_->resume_reading();
  expect_everything();
}

// Only with a thread: a session on the test's loop stops with it.
class SshHoldOnThread : public SshHold {};

TEST_P(SshHoldOnThread, LoopThatFallsBehindHoldsFerrydBack) {
  start();
  // The loop does not run: the session's thread reads on until kInFlight bytes wait for
  // it, then stops taking ferryd's output.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const double cpu_before = cpu_seconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  EXPECT_FALSE(fs::exists(poured_)) << "ferryd was not held back";
  EXPECT_EQ(got_.size(), 0u);
  EXPECT_LT(cpu_seconds() - cpu_before, 1.0) << "the held session spun";
  expect_everything();
}

// Two hosts' sessions on one I/O thread whose bytes in flight, both together, may not pass
// 64 KiB (less than a batch): while the loop does not run, each stops after its first
// batch; once it runs, both links deliver everything, in order, and end cleanly (a wake-up
// lost between the sessions and the loop would hold them forever).
class SshHoldSharedBudget : public SshHold {
  void options(SshOptions& o) override { o.all_in_flight = std::size_t{64} << 10; }
};

TEST_P(SshHoldSharedBudget, LinksSharingABudgetDeliverEverything) {
  std::unique_ptr<Link> second = open();
  ASSERT_TRUE(second);
  std::string got2;
  std::string reason2 = "<none>";
  start();
  second->start([&](std::string_view b) { got2.append(b); },
                [&](const std::string& r) { reason2 = r; });
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));  // the loop does not run
  expect_everything();
  ASSERT_TRUE(run_until(
      io_, [&] { return reason2 != "<none>"; }, std::chrono::seconds(30)));
  EXPECT_EQ(reason2, "");
  EXPECT_TRUE(got2 == expected_output(lines())) << "the second link lost bytes";
}

INSTANTIATE_TEST_SUITE_P(SessionOn, SshHoldSharedBudget, ::testing::Values(1),
                         [](const ::testing::TestParamInfo<int>&) {
                           return std::string("Thread");
                         });

INSTANTIATE_TEST_SUITE_P(SessionOn, SshHold, ::testing::Values(-1, 1),
                         [](const ::testing::TestParamInfo<int>& p) {
                           return p.param < 0 ? std::string("Loop") : std::string("Thread");
                         });

INSTANTIATE_TEST_SUITE_P(SessionOn, SshHoldExited, ::testing::Values(-1, 1),
                         [](const ::testing::TestParamInfo<int>& p) {
                           return p.param < 0 ? std::string("Loop") : std::string("Thread");
                         });

INSTANTIATE_TEST_SUITE_P(SessionOn, SshHoldOnLoop, ::testing::Values(-1),
                         [](const ::testing::TestParamInfo<int>&) { return std::string("Loop"); });

INSTANTIATE_TEST_SUITE_P(SessionOn, SshHoldOnThread, ::testing::Values(1),
                         [](const ::testing::TestParamInfo<int>&) {
                           return std::string("Thread");
                         });

}  // namespace
}  // namespace ferry
