// The one-line display while hosts connect: drawn in place once the start takes a moment,
// redrawn as hosts answer or fail, erased before the failures are listed one line each.
#include <gtest/gtest.h>
#include <unistd.h>

#include "fake_daemon.hpp"

namespace ferry {
namespace {

using test_support::DiscardSink;
using test_support::FakeDaemonLauncher;

// node1 and node2 answer at once (fake ferryds); "slow" never does.
class SlowHostLauncher : public Launcher {
 public:
  explicit SlowHostLauncher(asio::io_context& io) : fake_(io) {}
  void async_open(const HostEntry& host, const DaemonCommand& cmd, OpenHandler h) override {
    if (host.name == "slow") {
      held_.push_back(std::move(h));
      return;
    }
    fake_.async_open(host, cmd, std::move(h));
  }
  void cancel_all() override {
    for (auto& h : held_) h(make_error("slow:22: cancelled"));
    held_.clear();
  }

 private:
  FakeDaemonLauncher fake_;
  std::vector<OpenHandler> held_;
};

TEST(JobProgress, ConnectingLineIsDrawnInPlaceThenErasedBeforeTheFailures) {
  JobOptions o = test_support::job_on_hosts({"node1", "node2", "slow"}, 1);
  asio::io_context io;
  char path[] = "/tmp/ferry-progress-XXXXXX";
  int fd = ::mkstemp(path);
  ::unlink(path);
  DiscardSink sink;
  Diagnostics diag(&sink, fd, false);
  diag.enable_progress();
  SlowHostLauncher launcher(io);
  int status = 0;
  {
    Job job(io, o, Launchers{launcher, launcher}, sink, diag);
    status = job.run();
  }
  std::string out(4096, '\0');
  out.resize(static_cast<size_t>(::pread(fd, out.data(), out.size(), 0)));
  ::close(fd);
  EXPECT_EQ(status, 1);
  const std::string drawn = "\rferryrun: connected 2/3\x1b[K";
  const std::string erased = "\r\x1b[K";
  const size_t at = out.find(drawn);
  ASSERT_NE(at, std::string::npos) << out;
  const size_t gone = out.find(erased, at + drawn.size());
  ASSERT_NE(gone, std::string::npos) << "the line is erased";
  EXPECT_NE(out.find("no answer from ferryd within --start-timeout 1 s", gone), std::string::npos)
      << "the failure comes after the erase: " << out;
}

}  // namespace
}  // namespace ferry
