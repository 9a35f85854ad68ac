// ferryd's stderr lines reach the host they came from, even when two hosts share a name
// (two containers behind one address, told apart by port). The launcher here starts the
// real ferryd on this machine, as if over SSH, and has each ferryd "say" one stderr line.
#include <gtest/gtest.h>
#include <unistd.h>

#include "ferry/frontend/job.hpp"
#include "ferry/transport/local_launcher.hpp"
#include "job_test_support.hpp"

namespace ferry {
namespace {

// Forwards to a real link; when the job sends the first frame (the host's job description,
// so every ferryd has said hello), `talk` runs on the io_context.
class TalkingLink : public Link {
 public:
  TalkingLink(asio::io_context& io, std::unique_ptr<Link> inner, std::function<void()> talk)
      : io_(io), inner_(std::move(inner)), talk_(std::move(talk)) {}
  void start(DataHandler d, ClosedHandler c) override { inner_->start(std::move(d), std::move(c)); }
  void send(std::string bytes) override {
    if (talk_) asio::post(io_, std::exchange(talk_, nullptr));
    inner_->send(std::move(bytes));
  }
  void close() override { inner_->close(); }
  std::string peer_address() const override { return inner_->peer_address(); }
  std::string describe() const override { return inner_->describe(); }

 private:
  asio::io_context& io_;
  std::unique_ptr<Link> inner_;
  std::function<void()> talk_;
};

class TalkingLauncher : public Launcher {
 public:
  explicit TalkingLauncher(asio::io_context& io) : io_(io), inner_(io) {}
  void async_open(const HostEntry& host, const DaemonCommand& cmd, OpenHandler h) override {
    std::string line = "stderr of the ferryd on port " + std::to_string(host.port);
    inner_.async_open(host, cmd, [this, h, line, cmd](Result<std::unique_ptr<Link>> r) {
      if (!r) return h(std::move(r));
      auto talk = [line, say = cmd.on_stderr] { say(line); };
      h(std::unique_ptr<Link>(std::make_unique<TalkingLink>(io_, std::move(r.value()), talk)));
    });
  }
  void cancel_all() override {}

 private:
  asio::io_context& io_;
  LocalLauncher inner_;
};

TEST(JobDaemonStderr, LinesGoToTheirHostWhenTwoHostsShareAName) {
  asio::io_context io;
  char path[] = "/tmp/ferry-diag-XXXXXX";
  int fd = ::mkstemp(path);
  ::unlink(path);
  NullSink sink;
  Diagnostics diag(&sink, fd, false);
  TalkingLauncher launcher(io);
  JobOptions o;
  for (int port : {2201, 2202}) {
    HostEntry h;
    h.name = "127.0.0.1";
    h.port = port;
    o.hosts.push_back(h);
  }
  o.np = 2;
  o.command = {"true"};
  o.wdir = "/tmp";
  o.stdin_rank = -1;
  o.ferryd_path = std::string(FERRY_BIN_DIR) + "/ferryd";
  Job job(io, std::move(o), Launchers{launcher, launcher}, sink, diag);
  EXPECT_EQ(job.run(), 0);
  std::string text;
  ::lseek(fd, 0, SEEK_SET);
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  ::close(fd);
  EXPECT_NE(text.find("127.0.0.1:2201: stderr of the ferryd on port 2201\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("127.0.0.1:2202: stderr of the ferryd on port 2202\n"), std::string::npos)
      << text;
}

}  // namespace
}  // namespace ferry
