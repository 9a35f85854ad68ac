#pragma once
// Test support: ferryd played in-process, so the job controller can be tested without
// processes. Each link says Hello at once, keeps the HostSpec it receives, and then plays
// its host's script (by default: every rank starts and exits 0, then Done). Terminate and
// Signal end the ranks still running as a ferryd would (killed by SIGTERM / that signal);
// stdin bytes are kept and acknowledged; a preflight always succeeds (its network works).

#include <signal.h>
#include <unistd.h>

#include <asio.hpp>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ferry/frontend/job.hpp"
#include "ferry/transport/link.hpp"
#include "ferry/wire/messages.hpp"

namespace ferry::test_support {

class FakeDaemonLink;
/// What a host does once it has its HostSpec.
using FakeScript = std::function<void(FakeDaemonLink&)>;

/// A HostSpec as one host received it.
struct SentSpec {
  HostEntry host;
  wire::HostSpec spec;
};

class FakeDaemonLink : public Link {
 public:
  // `address`: the host's one interface (eth0, a /24), which ferryrun reaches it at.
  FakeDaemonLink(asio::io_context& io, HostEntry host, std::string address, FakeScript script,
                 std::vector<SentSpec>* specs, std::map<std::string, std::string>* stdin,
                 std::vector<std::string>* pmix_starts = nullptr)
      : io_(io),
        host_(std::move(host)),
        address_(std::move(address)),
        script_(std::move(script)),
        specs_(specs),
        stdin_(stdin),
        pmix_starts_(pmix_starts) {}
  ~FakeDaemonLink() override { *alive_ = false; }

  void start(DataHandler d, ClosedHandler c) override {
    on_data_ = std::move(d);
    on_closed_ = std::move(c);
    wire::Hello hello;
    hello.hostname = host_.name;
    hello.pid = 4242;
    hello.free_port = 29511;
    hello.interfaces = {"eth0 up " + address_ + "/24"};
    deliver(wire::encode(hello));
  }
  void send(std::string bytes) override {
    reader_.feed(bytes);
    for (;;) {
      auto f = reader_.next();
      if (!f || !*f) return;
      const wire::Frame& frame = **f;
      if (frame.type == static_cast<uint8_t>(wire::MsgType::kHostSpec)) {
        auto spec = wire::decode<wire::HostSpec>(frame);
        if (!spec) return;
        spec_ = *spec;
        ended_.clear();  // a job that restarts sends one spec per attempt
        done_sent_ = false;
        if (specs_) specs_->push_back({host_, spec_});
        asio::post(io_, [this, alive = alive_] {
          if (*alive && !closed_) script_ ? script_(*this) : run_all(0);
        });
      } else if (frame.type == static_cast<uint8_t>(wire::MsgType::kPmixStart)) {
        auto m = wire::decode<wire::PmixStart>(frame);
        if (m && pmix_starts_)
          pmix_starts_->push_back(host_.name + ":" + std::to_string(host_.port) + " as " + m->node +
                                  (spec_.ranks.empty() ? "" : " after its spec"));
      } else if (frame.type == static_cast<uint8_t>(wire::MsgType::kPreflight)) {
        deliver(wire::encode(wire::PreflightResult{}));  // the data network works
      } else if (frame.type == static_cast<uint8_t>(wire::MsgType::kTerminate)) {
        end_running(SIGTERM);
      } else if (frame.type == static_cast<uint8_t>(wire::MsgType::kStdin)) {
        auto in = wire::decode<wire::Stdin>(frame);
        if (!in) return;
        (*stdin_)[host_.name] += in->data;
        deliver(wire::encode(wire::StdinAck{static_cast<uint32_t>(in->data.size())}));
        if (in->data.empty() && exit_at_stdin_eof_) run_all(0);
      } else if (frame.type == static_cast<uint8_t>(wire::MsgType::kKvReply)) {
        auto r = wire::decode<wire::KvReply>(frame);
        if (r && on_kv_reply) on_kv_reply(*this, *r);
      } else if (frame.type == static_cast<uint8_t>(wire::MsgType::kSignal)) {
        auto s = wire::decode<wire::Signal>(frame);
        end_running(s ? s->signo : SIGTERM);
      }
    }
  }
  void close() override { closed_ = true; }
  std::string peer_address() const override { return address_; }
  std::string describe() const override {
    return host_.name + ":" + std::to_string(host_.port ? host_.port : 22);
  }

  // ---- for scripts ----
  const wire::HostSpec& spec() const { return spec_; }
  /// Called with each KvReply the front end sends (the answers to send_frame(KvRequest)).
  std::function<void(FakeDaemonLink&, const wire::KvReply&)> on_kv_reply;
  /// Every rank of the spec starts (pid 1000 + rank).
  void start_all() {
    for (const auto& r : spec_.ranks) deliver(wire::encode(wire::Started{r.rank, 1000 + r.rank}));
  }
  void rank_exits(int rank, int code, int sig = 0) {
    ended_.insert(rank);
    deliver(wire::encode(wire::Exited{rank, code, sig, {}}));
  }
  void send_frame(std::string frame) { deliver(std::move(frame)); }
  /// The ranks run until stdin's EOF arrives; then every rank exits 0.
  void exit_at_stdin_eof() {
    start_all();
    exit_at_stdin_eof_ = true;
  }
  /// Done once every rank has ended.
  void done_if_all_ended() {
    if (ended_.size() == spec_.ranks.size() && !done_sent_) {
      done_sent_ = true;
      // A fresh port each attempt, as ferryd finds one.
      deliver(wire::encode(wire::Done{static_cast<uint16_t>(29600 + spec_.attempt)}));
    }
  }
  /// Every rank starts and exits with `code`; then Done.
  void run_all(int code) {
    start_all();
    for (const auto& r : spec_.ranks) rank_exits(r.rank, code);
    done_if_all_ended();
  }
  /// The connection breaks (`reason` as a transport would say it).
  void cut(const std::string& reason) {
    asio::post(io_, [this, reason, alive = alive_] {
      if (!*alive || closed_) return;
      closed_ = true;
      on_closed_(reason);
    });
  }

 private:
  void end_running(int sig) {
    for (const auto& r : spec_.ranks)
      if (!ended_.count(r.rank)) rank_exits(r.rank, 0, sig);
    done_if_all_ended();
  }
  // Asynchronously, as a real link delivers bytes from the io_context.
  void deliver(std::string bytes) {
    asio::post(io_, [this, bytes = std::move(bytes), alive = alive_] {
      if (*alive && !closed_) on_data_(bytes);
    });
  }

  asio::io_context& io_;
  HostEntry host_;
  std::string address_;
  FakeScript script_;
  std::vector<SentSpec>* specs_;
  std::map<std::string, std::string>* stdin_;
  std::vector<std::string>* pmix_starts_;
  bool exit_at_stdin_eof_ = false;
  DataHandler on_data_;
  ClosedHandler on_closed_;
  wire::FrameReader reader_;
  wire::HostSpec spec_;
  std::set<int> ended_;
  bool done_sent_ = false;
  bool closed_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

/// Opens a FakeDaemonLink for every host (the n-th opened at 10.0.0.n); `script_for(host)`
/// picks each host's script (empty: every rank exits 0). The HostSpecs sent land in
/// `specs`, in arrival order.
class FakeDaemonLauncher : public Launcher {
 public:
  explicit FakeDaemonLauncher(asio::io_context& io) : io_(io) {}
  void async_open(const HostEntry& host, const DaemonCommand&, OpenHandler h) override {
    FakeScript script = script_for ? script_for(host) : nullptr;
    std::string address = "10.0.0." + std::to_string(++opened_);
    asio::post(io_, [this, h, host, address, script] {
      h(std::unique_ptr<Link>(std::make_unique<FakeDaemonLink>(io_, host, address, script, &specs,
                                                               &stdin, &pmix_starts)));
    });
  }
  void cancel_all() override {}

  std::function<FakeScript(const HostEntry&)> script_for;
  std::vector<SentSpec> specs;
  std::map<std::string, std::string> stdin;  ///< stdin bytes each host got, by host name
  /// The PmixStart frames, in arrival order: "host:port as node[ after its spec]".
  std::vector<std::string> pmix_starts;

 private:
  asio::io_context& io_;
  int opened_ = 0;
};

class DiscardSink : public OutputSink {
 public:
  void write(int, StreamId, std::string_view) override {}
  void close_stream(int, StreamId) override {}
  void flush() override {}
  void relabel(int rank, int shown) override { relabels.emplace_back(rank, shown); }
  std::vector<std::pair<int, int>> relabels;  ///< (rank, shown), in call order
};

/// A job run against fake daemons: its exit status, what ferryrun said (exactly as the
/// user sees it), the HostSpec each host received and the stdin bytes each host got.
struct FakeRun {
  int status = -1;
  std::string diag;
  std::vector<SentSpec> specs;
  std::map<std::string, std::string> stdin;   ///< stdin bytes each host got, by host name
  std::vector<std::string> pmix_starts;       ///< see FakeDaemonLauncher::pmix_starts
  std::vector<std::pair<int, int>> relabels;  ///< the output's relabel() calls (rank, shown)
};

/// A job of `app` on the named hosts, as these tests start one: in /tmp, no stdin, ferryd
/// installed, the hosts given `start_timeout_s` to answer.
inline JobOptions job_on_hosts(const std::vector<std::string>& names, int start_timeout_s) {
  JobOptions o;
  for (const std::string& name : names) {
    HostEntry h;
    h.name = name;
    o.hosts.push_back(h);
  }
  o.command = {"app"};
  o.wdir = "/tmp";
  o.stdin_rank = -1;
  o.start_timeout_s = start_timeout_s;
  o.ferryd_path = "/opt/ferry/bin/ferryd";
  return o;
}

/// Runs `opts` with `launcher` opening every host: the job's exit status; what ferryrun said
/// (exactly as the user sees it) is appended to `said`.
inline int run_job(asio::io_context& io, JobOptions opts, Launcher& launcher, DiscardSink& sink,
                   std::string& said) {
  char path[] = "/tmp/ferry-diag-XXXXXX";
  int fd = ::mkstemp(path);
  ::unlink(path);
  Diagnostics diag(&sink, fd, false);
  int status = -1;
  {
    Job job(io, std::move(opts), Launchers{launcher, launcher}, sink, diag);
    status = job.run();
  }
  const size_t before = said.size();
  char buf[4096];
  for (ssize_t n; (n = ::pread(fd, buf, sizeof buf, static_cast<off_t>(said.size() - before))) > 0;)
    said.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return status;
}

/// Runs `opts` with every host (local or not) played by a FakeDaemonLink.
inline FakeRun run_with_fake_daemons(JobOptions opts,
                                     std::function<FakeScript(const HostEntry&)> script_for = {}) {
  asio::io_context io;
  DiscardSink sink;
  FakeDaemonLauncher launcher(io);
  launcher.script_for = std::move(script_for);
  if (opts.ferryd_path.empty()) opts.ferryd_path = "/opt/ferry/bin/ferryd";
  if (opts.stdin_fd == 0) opts.stdin_rank = -1;  // never the test runner's own stdin
  FakeRun run;
  run.status = run_job(io, std::move(opts), launcher, sink, run.diag);
  run.specs = std::move(launcher.specs);
  run.stdin = std::move(launcher.stdin);
  run.pmix_starts = std::move(launcher.pmix_starts);
  run.relabels = std::move(sink.relabels);
  return run;
}

}  // namespace ferry::test_support
