// The job controller and an output sink that falls behind: the job stops reading its hosts
// while the sink says so, with heartbeats on holds that silence against no host, and
// once the sink catches up every byte arrives. Real ferryd over the local launcher.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <map>
#include <string>

#include "ferry/frontend/job.hpp"
#include "ferry/transport/local_launcher.hpp"
#include "job_test_support.hpp"
#include "refusing_launcher.hpp"

namespace ferry {
namespace {

using Clock = std::chrono::steady_clock;

// Behind from the first byte on, for `pause`; counts what arrives meanwhile.
class SlowSink : public OutputSink {
 public:
  SlowSink(asio::io_context& io, std::chrono::milliseconds pause) : timer_(io), pause_(pause) {}
  void write(int rank, StreamId, std::string_view b) override {
    if (behind_) bytes_while_behind += b.size();
    data[rank].append(b);
    if (started_ || !flow_) return;
    started_ = true;
    behind_ = true;
    flow_(true);
    timer_.expires_after(pause_);
    timer_.async_wait([this](std::error_code ec) {
      if (ec) return;
      behind_ = false;
      flow_(false);
    });
  }
  void close_stream(int, StreamId) override {}
  void flush() override {}
  void set_flow_handler(std::function<void(bool)> h) override { flow_ = std::move(h); }

  std::map<int, std::string> data;
  size_t bytes_while_behind = 0;

 private:
  asio::steady_timer timer_;
  std::chrono::milliseconds pause_;
  std::function<void(bool)> flow_;
  bool started_ = false;
  bool behind_ = false;
};

TEST(JobFlow, PausedReadingLosesNoHostAndNoByte) {
  asio::io_context io;
  // Longer than three heartbeat intervals: a paused host is silent all that time.
  SlowSink sink(io, std::chrono::milliseconds(4500));
  char path[] = "/tmp/ferry-diag-XXXXXX";
  int fd = ::mkstemp(path);
  ::unlink(path);
  Diagnostics diag(&sink, fd, false);
  LocalLauncher local(io);
  test_support::RefusingLauncher remote(io);
  JobOptions o;
  HostEntry h;
  h.name = "localhost";
  h.slots = 2;
  o.hosts = {h};
  o.np = 2;
  o.command = {"sh", "-c", "seq 1 200000"};
  o.wdir = "/tmp";
  o.heartbeat_s = 1;
  o.stdin_rank = -1;
  o.ferryd_path = std::string(FERRY_BIN_DIR) + "/ferryd";
  const auto start = Clock::now();
  Job job(io, std::move(o), Launchers{local, remote}, sink, diag);
  const int status = job.run();
  const std::string diag_text = read_all(fd);
  ::close(fd);

  EXPECT_EQ(status, 0) << diag_text;
  EXPECT_EQ(diag_text.find("lost host"), std::string::npos) << diag_text;
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(4500));
  // The rest of the read that made it fall behind (one socket read of 256 KiB at most).
  EXPECT_LE(sink.bytes_while_behind, 256u << 10) << "hosts were read while the sink was behind";
  std::string expected;
  for (int i = 1; i <= 200000; ++i) expected += std::to_string(i) + "\n";
  for (int r = 0; r < 2; ++r) EXPECT_TRUE(sink.data[r] == expected) << "rank " << r;
}

}  // namespace
}  // namespace ferry
