// Reaping a locally forked ferryd never stalls the io_context: a ticking timer keeps its
// pace while the link waits for the exit status, and a closed link's ferryd is reaped in
// the background. The "ferryd" here is a script that closes its stream and lingers.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include "ferry/transport/local_launcher.hpp"

namespace ferry {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/ferry_reap_test.XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  fs::path path;
};

// Writes an executable shell script standing in for ferryd.
std::string fake_ferryd(const TempDir& dir, const std::string& body) {
  const fs::path p = dir.path / "ferryd";
  std::ofstream(p) << "#!/bin/sh\n" << body << "\n";
  ::chmod(p.c_str(), 0755);
  return p.string();
}

// Ticks every 5 ms on the io_context and remembers the longest gap between two ticks.
class Ticker {
 public:
  explicit Ticker(asio::io_context& io) : timer_(io) { tick(); }
  // Counts the time since the last tick too: a stall may end right here.
  void stop() {
    note(Clock::now());
    stopped_ = true;
    timer_.cancel();
  }
  std::chrono::milliseconds longest_gap() const { return longest_; }

 private:
  void note(Clock::time_point now) {
    if (last_)
      longest_ =
          std::max(longest_, std::chrono::duration_cast<std::chrono::milliseconds>(now - *last_));
    last_ = now;
  }
  void tick() {
    note(Clock::now());
    if (stopped_) return;
    timer_.expires_after(std::chrono::milliseconds(5));
    timer_.async_wait([this](std::error_code ec) {
      if (!ec) tick();
    });
  }
  asio::steady_timer timer_;
  std::optional<Clock::time_point> last_;
  std::chrono::milliseconds longest_{0};
  bool stopped_ = false;
};

std::unique_ptr<Link> open_local(asio::io_context& io, LocalLauncher& launcher,
                                 const std::string& ferryd) {
  HostEntry host;
  host.name = "localhost";
  DaemonCommand cmd;
  cmd.ferryd_path = ferryd;
  std::unique_ptr<Link> link;
  launcher.async_open(host, cmd, [&](Result<std::unique_ptr<Link>> r) {
    io.stop();  // at once: the fake ferryd's clock is running
    ASSERT_TRUE(r) << r.error().message;
    link = std::move(r.value());
  });
  io.run_for(std::chrono::seconds(2));
  io.restart();
  return link;
}

TEST(LocalLinkReap, WaitingForTheExitStatusNeverStallsTheLoop) {
  TempDir dir;
  // The stream ends at once; the exit status comes 600 ms later.
  const std::string ferryd = fake_ferryd(dir, "exec 0<&- 1>&-\nsleep 0.6\nexit 3");
  asio::io_context io;
  LocalLauncher launcher(io);
  auto link = open_local(io, launcher, ferryd);
  ASSERT_TRUE(link);

  Ticker ticker(io);
  std::optional<std::string> reason;
  const auto start = Clock::now();
  link->start([](std::string_view) {},
              [&](const std::string& r) {
                reason = r;
                ticker.stop();
              });
  io.run_for(std::chrono::seconds(5));

  ASSERT_TRUE(reason) << "the link never reported its end";
  EXPECT_EQ(*reason, "ferryd exited with status 3");
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(500));  // it did wait for it
  EXPECT_LT(ticker.longest_gap(), std::chrono::milliseconds(150))
      << "the loop stalled while the link waited for ferryd's exit";
}

TEST(LocalLinkReap, ClosedLinkIsReapedInTheBackground) {
  TempDir dir;
  const fs::path pid_file = dir.path / "pid";
  // Like ferryd: on EOF it stops (300 ms here) and exits. Its pid is written aside and
  // renamed into place: `echo > pid_file` creates the file before it writes the number, and
  // the test could read it empty in between.
  const std::string ferryd =
      fake_ferryd(dir, "echo $$ > " + pid_file.string() + ".part && mv " + pid_file.string() +
                           ".part " + pid_file.string() + "\ncat >/dev/null\nsleep 0.3");
  asio::io_context io;
  LocalLauncher launcher(io);
  auto link = open_local(io, launcher, ferryd);
  ASSERT_TRUE(link);
  link->start([](std::string_view) {}, [](const std::string&) {});
  for (int i = 0; i < 200 && !fs::exists(pid_file); ++i) io.run_for(std::chrono::milliseconds(10));
  io.restart();
  pid_t pid = 0;
  std::ifstream(pid_file) >> pid;
  ASSERT_GT(pid, 0);

  Ticker ticker(io);
  link->close();
  link.reset();
  io.run_for(std::chrono::milliseconds(1200));
  ticker.stop();

  EXPECT_LT(ticker.longest_gap(), std::chrono::milliseconds(150));
  // Reaped: no zombie left behind under that pid.
  EXPECT_FALSE(fs::exists("/proc/" + std::to_string(pid))) << "ferryd " << pid << " not reaped";
}

// ferryd printed its last output and exited while the link was paused (the console stopped
// reading): the frames sent to it meanwhile (heartbeats) fail, and that is no reason to end the
// link before what ferryd wrote was delivered. Once resumed, it is, and the end is clean.
TEST(LocalLinkPaused, FerrydThatExitedWhilePausedLosesNothing) {
  TempDir dir;
  const fs::path done = dir.path / "done";
  const std::string ferryd =
      fake_ferryd(dir, "echo last words\nexec 0<&- 1>&-\ntouch " + done.string());
  asio::io_context io;
  LocalLauncher launcher(io);
  auto link = open_local(io, launcher, ferryd);
  ASSERT_TRUE(link);
  std::string got;
  std::optional<std::string> reason;
  link->pause_reading();
  link->start([&](std::string_view b) { got.append(b); },
              [&](const std::string& r) { reason = r; });
  // Paused, the link waits for nothing: the loop may have no work to run meanwhile.
  for (int i = 0; i < 200 && !fs::exists(done); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(fs::exists(done));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // ferryd exits after the touch
  for (int i = 0; i < 10; ++i) {
    link->send(std::string(17, 'h'));
    io.run_for(std::chrono::milliseconds(50));
    io.restart();
  }
  EXPECT_FALSE(reason) << "the paused link ended: " << reason.value_or("");
  EXPECT_EQ(got, "");
  link->resume_reading();
  for (int i = 0; i < 200 && !reason; ++i) io.run_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(reason) << "the link never reported its end";
  EXPECT_EQ(*reason, "");
  EXPECT_EQ(got, "last words\n");
}

}  // namespace
}  // namespace ferry
