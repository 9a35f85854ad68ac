// --sync seen from the front end: a host is asked for its copy of the tree as soon as its ferryd
// greets, while the other hosts are still being reached; the ranks start only once every host
// has its copy; a failure that comes before the attempt is said as any sync failure is.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "fake_daemon.hpp"
#include "ferry/wire/frame.hpp"

namespace ferry {
namespace {

using test_support::DiscardSink;
using test_support::FakeDaemonLink;

// A fake ferryd (FakeDaemonLink) that also keeps a copy of the tree: it answers the digest probe
// with its copy, or with `fail`. "node2" greets only once node1 was probed, so a front end that
// asks no host before every host greeted never starts the job. Each host's greeting, probe and
// HostSpec go into `events`, in order.
class SyncingLink : public Link {
 public:
  SyncingLink(asio::io_context& io, const HostEntry& host, std::string address,
              std::vector<std::string>* events, std::vector<test_support::SentSpec>* specs,
              std::map<std::string, std::string>* stdin, std::string fail,
              std::function<void()>* release)
      : io_(io),
        name_(host.name),
        events_(events),
        fail_(std::move(fail)),
        release_(release),
        inner_(io, host, std::move(address), nullptr, specs, stdin) {}

  void start(DataHandler on_data, ClosedHandler on_closed) override {
    on_data_ = std::move(on_data);
    held_ = name_ == "node2";
    if (held_)
      *release_ = [this] {
        held_ = false;
        greeted_ = true;
        events_->push_back(name_ + " hello");
        on_data_(held_bytes_);
      };
    inner_.start(
        [this](std::string_view bytes) {
          if (held_) return held_bytes_.append(bytes), void();
          if (!greeted_) events_->push_back(name_ + " hello");
          greeted_ = true;
          on_data_(bytes);
        },
        std::move(on_closed));
  }
  void send(std::string bytes) override {
    reader_.feed(bytes);
    for (;;) {
      auto f = reader_.next();
      if (!f || !*f) break;
      const auto type = static_cast<wire::MsgType>((**f).type);
      if (type == wire::MsgType::kSyncProbe) {
        events_->push_back(name_ + " probed");
        const wire::SyncReady ready{fail_.empty() ? "/copies/" + name_ : "", fail_, ""};
        asio::post(io_, [this, frame = wire::encode(ready)] { on_data_(frame); });
        if (name_ == "node1" && *release_) asio::post(io_, *release_);
      } else if (type == wire::MsgType::kHostSpec) {
        events_->push_back(name_ + " spec");
      }
    }
    inner_.send(std::move(bytes));
  }
  void close() override { inner_.close(); }
  std::string peer_address() const override { return inner_.peer_address(); }
  std::string describe() const override { return inner_.describe(); }

 private:
  asio::io_context& io_;
  std::string name_;
  std::vector<std::string>* events_;
  std::string fail_;
  std::function<void()>* release_;
  FakeDaemonLink inner_;
  DataHandler on_data_;
  wire::FrameReader reader_;
  bool held_ = false, greeted_ = false;
  std::string held_bytes_;
};

class SyncingLauncher : public Launcher {
 public:
  SyncingLauncher(asio::io_context& io, std::string fail) : io_(io), fail_(std::move(fail)) {}
  void async_open(const HostEntry& host, const DaemonCommand&, OpenHandler h) override {
    const std::string address = "10.0.0." + std::to_string(++opened_);
    asio::post(io_, [this, h, host, address] {
      h(std::unique_ptr<Link>(std::make_unique<SyncingLink>(io_, host, address, &events, &specs,
                                                            &stdin_, fail_, &release_)));
    });
  }
  void cancel_all() override {}

  std::vector<std::string> events;
  std::vector<test_support::SentSpec> specs;

 private:
  asio::io_context& io_;
  std::string fail_;
  int opened_ = 0;
  std::map<std::string, std::string> stdin_;
  std::function<void()> release_;
};

struct SyncRun {
  int status = -1;
  std::string diag;
  std::vector<std::string> events;
};

SyncRun run_job_of(const JobOptions& o, const std::string& fail) {
  asio::io_context io;
  DiscardSink sink;
  SyncingLauncher launcher(io, fail);
  SyncRun run;
  run.status = test_support::run_job(io, o, launcher, sink, run.diag);
  run.events = launcher.events;
  return run;
}

SyncRun run_synced(const std::string& fail) {
  JobOptions o = test_support::job_on_hosts({"node1", "node2"}, 2);
  auto tree = std::make_shared<SyncTree>();
  tree->digest = std::string(64, 'a');
  o.sync = tree;
  return run_job_of(o, fail);
}

// The tree as ferryrun's command line leaves it: still to be read, which the job does on a
// thread of its own while its hosts are reached.
SyncRun run_requested(const std::string& dir) {
  JobOptions o = test_support::job_on_hosts({"node1", "node2"}, 2);
  SyncRequest r;
  r.parts.push_back({SyncSpec{dir, ""}, {}, ""});
  o.sync_request = std::make_shared<const SyncRequest>(std::move(r));
  return run_job_of(o, "");
}

std::string fresh_tree(const std::string& name) {
  std::string dir = ::testing::TempDir() + "jobsync-" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/sub");
  std::ofstream(dir + "/sub/run.py") << "print(1)\n";
  return dir;
}

TEST(JobSync, AHostIsProbedWhenItGreetsAndTheRanksStartOnceEveryCopyIsThere) {
  const SyncRun run = run_synced("");
  EXPECT_EQ(run.status, 0) << run.diag;
  const std::vector<std::string> want = {"node1 hello",  "node1 probed", "node2 hello",
                                         "node2 probed", "node1 spec",   "node2 spec"};
  std::vector<std::string> got = run.events;
  // The two specs go out in one turn, in either order.
  if (got.size() == 6 && got[4] == "node2 spec") std::swap(got[4], got[5]);
  EXPECT_EQ(got, want) << run.diag;
}

TEST(JobSync, AFailureBeforeTheAttemptIsOneLineAndNoRankStarts) {
  const SyncRun run = run_synced("the cache cannot be used");
  EXPECT_NE(run.status, 0);
  EXPECT_NE(run.diag.find("ferryrun: --sync: node1: the cache cannot be used\n"), std::string::npos)
      << run.diag;
  for (const std::string& e : run.events) EXPECT_EQ(e.find(" spec"), std::string::npos) << e;
}

TEST(JobSync, ATreeReadWhileTheHostsAreReachedIsProbedOnEveryHostBeforeAnyRank) {
  const SyncRun run = run_requested(fresh_tree("read"));
  EXPECT_EQ(run.status, 0) << run.diag;
  std::vector<std::string> probes, specs;
  for (const std::string& e : run.events) {
    if (e.ends_with(" probed")) probes.push_back(e);
    if (e.ends_with(" spec")) {
      EXPECT_EQ(probes.size(), 2U) << "a spec before every host was probed: " << e;
      specs.push_back(e);
    }
  }
  EXPECT_EQ(probes, (std::vector<std::string>{"node1 probed", "node2 probed"})) << run.diag;
  EXPECT_EQ(specs.size(), 2U) << run.diag;
}

// What the reading refuses (here a link out of the tree) ends the job as a bad command line:
// one line, exit status 2, and no host is asked for the tree or sent a rank.
TEST(JobSync, ATreeTheReadingRefusesIsOneLineExitTwoAndNothingSent) {
  const std::string dir = fresh_tree("refused");
  std::filesystem::create_symlink("/etc", dir + "/sub/etc");
  const SyncRun run = run_requested(dir);
  EXPECT_EQ(run.status, 2);
  EXPECT_EQ(run.diag, "ferryrun: " + dir +
                          "/sub/etc: a symlink to /etc, outside the tree (only links inside it "
                          "are synced; leave it out with --sync-exclude)\n");
  for (const std::string& e : run.events)
    EXPECT_TRUE(e.ends_with(" hello")) << "sent after the tree was refused: " << e;
}

}  // namespace
}  // namespace ferry
