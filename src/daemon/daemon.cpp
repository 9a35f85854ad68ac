#include "ferry/daemon/daemon.hpp"

#include <sys/prctl.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "ferry/daemon/kv_proxy.hpp"
#include "ferry/daemon/output_pump.hpp"
#include "ferry/daemon/own_name.hpp"
#include "ferry/daemon/pmi_proxy.hpp"
#include "ferry/daemon/sweeper.hpp"
#include "ferry/process/spawner.hpp"
#include "ferry/rendezvous/interfaces.hpp"
#include "ferry/rendezvous/kv_store.hpp"
#include "ferry/wire/frame.hpp"
#include "ferry/wire/messages.hpp"
#include "free_port.hpp"
#include "output_route.hpp"
#include "pmix_service.hpp"
#include "preflight_peer.hpp"
#include "rank_launcher.hpp"
#include "rank_output.hpp"
#include "rank_sampling.hpp"
#include "rank_set.hpp"
#include "state_collector.hpp"
#include "stdin_feed.hpp"
#include "sync_receiver.hpp"

namespace ferry {
namespace {

// A direct output route is opened once this much output went to stdout.
constexpr uint64_t kRouteAfter = uint64_t{1} << 20;

}  // namespace

// The session with the front end: frames in and out, the job's course on this host from
// HostSpec to Done, and the end of it all when the front end goes away. The ranks
// themselves are RankLauncher's (starting), RankSet's (exits, signals), RankStream's
// (output) and StdinFeed's (stdin).
class Daemon::Impl {
 public:
  Impl(asio::io_context& io, const DaemonOptions& opts)
      : io_(io),
        host_(own_host_name()),
        own_spawner_(opts.spawner ? nullptr : std::make_unique<SystemSpawner>()),
        spawner_(opts.spawner ? *opts.spawner : *own_spawner_),
        subreaper_(opts.subreaper),
        settings_(opts.settings),
        in_(io, opts.in_fd),
        pump_(io, opts.out_fd, {[this] { output_idle(); }, [this] { front_lost(); }}),
        channel_(io, pump_, pump_.can_splice() && !opts.settings.output_copy),
        signals_(io),
        beat_timer_(io),
        exit_timer_(io),
        stdin_(io, [this](size_t n) { queue(wire::encode(wire::StdinAck{uint32_t(n)})); }),
        launcher_(spawner_, host_, [this](const std::string& line) { log(line); }),
        ranks_(io, spawner_, channel_,
               [this](const Rank& r, const wire::Exited& e) { rank_reported(r, e); }),
        kv_(
            io, [this](const wire::KvRequest& r) { queue(wire::encode(r)); },
            [this](const std::string& line) {
              if (spec_.verbose) log(host_ + ": " + line);
            }),
        pmix_(
            io, guard_, [this](const std::string& frame) { queue(frame); },
            [this](const std::string& line) { log(line); },
            [this]() -> void* { return launcher_.topology(); }) {}

  ~Impl() { *alive_ = false; }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  void start() {
    guard_.start();
    // Orphans below ferryd come to it instead of init: the sweep finds them all (but the guard).
    if (subreaper_ && ::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0) sweep_.descendants = true;
    sweep_.spared = {guard_.pid()};
    launcher_.load_devices(settings_.device_root);
    spawner_.watch(io_, [this] { ranks_.reap(); });
    for (int signo : {SIGTERM, SIGINT, SIGHUP}) signals_.add(signo);
    wait_signal();
    send_hello();
    read_input();
  }

  int exit_code() const { return exit_code_; }

 private:
  // ---- frames to the front end --------------------------------------------------------

  void queue(const std::string& frame) {
    if (front_gone_) return;
    out().send(frame);
  }

  // Where frames go now: the direct route once it is open, else stdout.
  OutputPump& out() { return routed_ ? *routed_ : pump_; }
  bool output_idle_now() const { return pump_.idle() && (!routed_ || routed_->idle()); }

  void log(const std::string& line) { queue(wire::encode(wire::Log{line})); }

  // Everything queued was written. Parked rank pipes are read again, and what they hold may
  // end the job there and then: its exit reports and Done are queued, and may find the stream
  // full. ferryd exits only once those too were written (here, or at the next idle).
  void output_idle() {
    if (!output_idle_now()) return;
    channel_.pump_idle();
    if (finished_ && !spec_.keep_serving && output_idle_now()) stop();
  }

  void send_hello() {
    wire::Hello h;
    h.hostname = host_;
    h.pid = ::getpid();
    h.free_port = find_free_port();
    // The KV proxy listens from the start, so its port can go into the ranks' environment.
    if (auto port = kv_.listen())
      h.kv_port = *port;
    else
      ::fprintf(stderr, "ferryd: %s\n", port.error().message.c_str());
    SystemInterfaceReader ifs(settings_.sysfs_net);
    if (auto list = ifs.read()) h.interfaces = interfaces_to_lines(*list);
    for (int n : launcher_.socket_cores()) h.socket_cores.push_back(static_cast<uint32_t>(n));
    queue(wire::encode(h));
  }

  // ---- frames from the front end ------------------------------------------------------

  void read_input() {
    in_.async_read_some(asio::buffer(in_buf_), [this](std::error_code ec, size_t n) {
      if (ec) {
        // A stream that ends inside a frame was cut, or is not ferryrun's; one that fed
        // stdin to a job that never came is not ferryrun's either.
        if (const size_t left = reader_.buffered(); left > 0 && !front_gone_)
          ::fprintf(stderr, "ferryd: input ended inside a frame (%zu byte(s) of it arrived)\n",
                    left);
        else if (early_stdin_ > 0 && !have_spec_ && !front_gone_)
          ::fprintf(stderr, "ferryd: input ended before the HostSpec, after stdin for its job\n");
        return front_lost();
      }
      reader_.feed(std::string_view(in_buf_.data(), n));
      last_heard_ = std::chrono::steady_clock::now();
      for (;;) {
        auto f = reader_.next_view();
        if (!f) return fatal(f.error().message);
        if (!*f) break;
        handle(**f);
        if (front_gone_) return;
      }
      read_input();
    });
  }

  void handle(const wire::FrameView& f) {
    auto msg = wire::decode_to_daemon(f);
    if (!msg) return fatal(msg.error().message);
    std::visit(
        wire::Overloaded{
            [this](wire::HostSpec& spec) { on_host_spec(std::move(spec)); },
            [this](wire::Stdin& in) {
              if (!have_spec_) early_stdin_ += in.data.size() + 1;
              stdin_.feed(std::move(in.data));
            },
            [this](wire::Signal& s) { ranks_.signal_all(s.signo); },
            [this](wire::Terminate& t) { ranks_.terminate(std::chrono::milliseconds(t.grace_ms)); },
            [](wire::Heartbeat&) {},  // reading it was the point (last_heard_)
            [this](wire::KvReply& r) { kv_.reply(r); },
            [this](wire::PmiBarrierDone& b) {
              if (!pmi_) return fatal("a PMI barrier answer arrived, but PMI is off");
              if (auto s = pmi_->barrier_done(b); !s) fatal(s.error().message);
            },
            [this](wire::StartRanks& m) { on_start_ranks(std::move(m)); },
            [this](wire::PmixFenceDone& m) {
              if (auto s = pmix_.fence_done(m); !s) fatal(s.error().message);
            },
            [this](wire::PmixModexRequest& m) { pmix_.modex_request(m); },
            [this](wire::PmixNames& m) { pmix_.names_answer(m); },
            [this](wire::PmixGroupDone& m) { pmix_.group_done(m); },
            [this](wire::PmixSpawnDone& m) { pmix_.spawn_done(m); },
            [this](wire::PmixSpawnJob& m) { on_spawn_job(std::move(m)); },
            [this](wire::PmixModexReply& m) {
              if (auto s = pmix_.modex_reply(m); !s) fatal(s.error().message);
            },
            [this](wire::OutputRoute& r) { route_output(r); },
            [this](wire::StateRequest& m) { state_.collect(m.id, ranks_.running()); },
            [this](wire::Preflight& m) { preflight_.handle(m); },
            [this](wire::CheckRequest&) { state_.check(); },
            [this](wire::PmixStart& m) {
              if (!have_spec_) pmix_.start_early(m.node);
            },
            [this](wire::SyncProbe& m) { sync_.probe(m); },
            [this](wire::SyncOffer& m) { sync_.offer(m); },
            [this](wire::SyncData& m) { sync_.data(m); },
            [this](wire::StopRanks& m) {
              ranks_.stop(m.ranks, std::chrono::milliseconds(m.grace_ms));
            },
        },
        *msg);
  }

  // ferryrun offers a direct route for the output (once). It is opened only once this ferryd
  // has queued kRouteAfter bytes: a job that prints little pays neither the connection nor
  // libcrypto. From then on frames go there as soon as it is open; until then, and if it
  // never opens, they go on over stdout.
  void route_output(const wire::OutputRoute& offer) {
    if (route_offered_) return;
    route_offered_ = true;
    pump_.when_accepted(kRouteAfter, [this, offer, alive = alive_] {
      if (!*alive || front_gone_) return;
      open_output_route(io_, offer, [this, alive](Result<OpenedRoute> r) {
        if (*alive) route_opened(std::move(r));
      });
    });
  }

  void route_opened(Result<OpenedRoute> r) {
    if (front_gone_) return;
    if (!r) {
      route_problem_ = host_ + ": output stays on SSH: " + r.error().message;
      if (have_spec_) tell_route_problem();
      return;
    }
    routed_ = std::make_unique<OutputPump>(
        io_, r->fd.release(),
        OutputPump::Events{[this] { output_idle(); }, [this] { front_lost(); }});
    // Everything queued on stdout so far leaves there; ferryrun reads that many bytes there
    // before the route's.
    routed_->seal_with(std::move(r->sealer), route_preamble(pump_.accepted()));
    channel_.reroute(*routed_);
  }

  // Why the route did not open, for --verbose (the spec says whether it is on); once.
  void tell_route_problem() {
    if (spec_.verbose && !route_problem_.empty()) log(route_problem_);
    route_problem_.clear();
  }

  // --sync: the ranks start in the job's copy; relative directories are taken inside it.
  void in_synced_copy(wire::HostSpec& spec) const {
    if (sync_.copy().empty()) return;
    spec.wdir = sync_.inside_copy(spec.wdir);
    spec.wdir_fallback = false;
    for (wire::RankLaunch& r : spec.ranks)
      if (!r.wdir.empty()) r.wdir = sync_.inside_copy(r.wdir);
  }

  void on_host_spec(wire::HostSpec spec) {
    if (have_spec_ && !(finished_ && spec_.keep_serving))
      return fatal(finished_ ? "a second host spec arrived"
                             : "a host spec arrived while ranks run");
    if (have_spec_) next_attempt();
    const bool first = !have_spec_;
    have_spec_ = true;
    spec_ = std::move(spec);
    in_synced_copy(spec_);
    preflight_.close();  // the ranks' own MASTER_PORT from now on
    tell_route_problem();
    if (first && spec_.heartbeat_ms > 0) heartbeat();
    if (first) {
      tag_ = spec_.job_id + "." + std::to_string(::getpid());
      guard_.set_job(tag_);
    }
    start_rendezvous();
    sampling_.start(std::chrono::milliseconds(spec_.sample_ms));
    launcher_.prepare(spec_, tag_, pmi_.get());
    if (!launcher_.error_dir().empty()) guard_.remove_at_exit(launcher_.error_dir());
    launcher_.use_pmix(pmix_.begin(spec_, launcher_.cpusets()));
    bool stdin_here = false;
    for (size_t i = 0; i < spec_.ranks.size(); ++i) {
      ranks_.add(spec_.ranks[i].rank, i);
      stdin_here |= spec_.ranks[i].rank == spec_.stdin_rank;
    }
    // Stdin kept for a rank that is not here (or for none) is dropped, so acknowledged.
    if (!stdin_here) stdin_.close();
    if (spec_.ranks.empty()) return check_done();
    // Every rank starts in its own turn, so frames already read (a Terminate) act first.
    asio::post(io_, [this] { launch(0); });
  }

  // Ranks that join the job running here (elastic Horovod: new slots on this host). They
  // start after the spec's own, one a turn, and are watched, stopped and swept as those are.
  // Processes MPI_Comm_spawn started: their namespace registered here first (whether or not
  // any runs here), then this host's start as ranks that joined do. Should the namespace
  // not register, they fail to start, each with the reason.
  void on_spawn_job(wire::PmixSpawnJob m) {
    if (auto s = pmix_.spawn_job(m); !s) {
      log(host_ + ": MPI_Comm_spawn: " + s.error().message);
      for (const auto& rl : m.ranks) queue(wire::encode(wire::Exited{rl.rank, 127, 0, {}}));
      return;
    }
    if (!m.ranks.empty()) on_start_ranks(wire::StartRanks{std::move(m.ranks)});
  }

  void on_start_ranks(wire::StartRanks m) {
    if (!have_spec_) return fatal("ranks to start arrived before the host spec");
    for (const auto& rl : m.ranks)
      if (ranks_.find(rl.rank))
        return fatal("rank " + std::to_string(rl.rank) + " to start is already on this host");
    if (finished_) {
      // Every rank here ended and Done went out: these never run, and say so.
      for (const auto& rl : m.ranks) queue(wire::encode(wire::Exited{rl.rank, 0, SIGKILL, {}}));
      return;
    }
    const size_t first = ranks_.ranks().size();
    for (auto& rl : m.ranks) {
      ranks_.add(rl.rank, spec_.ranks.size());
      spec_.ranks.push_back(std::move(rl));
    }
    asio::post(io_, [this, first] { launch(first); });
  }

  // The previous attempt is over here (Done was sent): its ranks and PMI go, the job tag,
  // the guard and the connection stay.
  void next_attempt() {
    ranks_.clear();
    if (pmi_) retired_pmi_.push_back(std::move(pmi_));  // its last handlers may be queued
    ranks_.use_pmi(nullptr);
    finished_ = false;
  }

  // With heartbeats on, ferryd sends one every interval and gives up on a front end it
  // has not heard from for three: a cut link may never deliver EOF.
  void heartbeat() {
    const auto interval = std::chrono::milliseconds(spec_.heartbeat_ms);
    if (std::chrono::steady_clock::now() - last_heard_ > 3 * interval) {
      ::fprintf(stderr, "ferryd: no word from ferryrun for %u ms; stopping the job\n",
                3 * spec_.heartbeat_ms);
      return front_lost();
    }
    queue(wire::encode(wire::Heartbeat{}));
    beat_timer_.expires_after(interval);
    beat_timer_.async_wait([this](std::error_code ec) {
      if (!ec && !front_gone_ && (!finished_ || spec_.keep_serving)) heartbeat();
    });
  }

  // ---- starting the ranks -------------------------------------------------------------

  void start_rendezvous() {
    kv_.set_secret(spec_.secret);
    // A rank whose put the full store refused fails; it is stopped, as it may go on putting.
    kv_.on_store_full([this](pid_t pid) {
      if (Rank* r = ranks_.find_process(pid); r && r->state == Rank::State::kRunning) {
        queue(wire::encode(wire::Failure{r->rank, store_full_message("key-value store")}));
        ranks_.stop(*r, std::chrono::milliseconds(0));
      }
    });
    if (!spec_.pmi) return;
    PmiProxy::Events ev;
    ev.send = [this](const std::string& frame) { queue(frame); };
    ev.closed = [this](int rank) { ranks_.pmi_closed(rank); };
    pmi_ = std::make_unique<PmiProxy>(io_, pmi_host_config_of(spec_), std::move(ev));
    ranks_.use_pmi(pmi_.get());
  }

  // Starts the rank at `local`, then the next one in a later turn.
  void launch(size_t local) {
    const auto& ranks = ranks_.ranks();
    if (local >= ranks.size()) return;
    start_rank(*ranks[local]);
    asio::post(io_, [this, local] { launch(local + 1); });
  }

  // Told to stop meanwhile (Terminate, or the front end gone), the rank is not started: it
  // is reported as killed, so the front end hears of every rank.
  void start_rank(Rank& r) {
    if (r.state != Rank::State::kPending) return;  // stopped before its turn, or started
    if (ranks_.terminating() || front_gone_) return ranks_.not_started(r, 0, SIGKILL);
    auto l = launcher_.start(r.local);
    if (!l) {
      queue(wire::encode(wire::Failure{r.rank, l.error().message}));
      return ranks_.not_started(r, 127, 0);
    }
    ranks_.started(r, l->pid, std::move(l->out), std::move(l->err));
    guard_.add_pgid(l->pid);
    if (l->in) stdin_.attach(std::move(l->in));
    queue(wire::encode(wire::Started{r.rank, l->pid}));
    kv_.set_candidates(ranks_.started_pids());
  }

  // ---- exits and the end --------------------------------------------------------------

  void rank_reported(const Rank& r, const wire::Exited& e) {
    if (auto why = pmix_.exit_failure(r.rank, e); !why.empty())
      queue(wire::encode(wire::Failure{r.rank, why}));
    if (spec_.error_files && (e.exit_code != 0 || e.signal != 0)) {
      wire::Exited with_file = e;
      with_file.error_file = launcher_.error_file(r.local);
      queue(wire::encode(with_file));
    } else {
      queue(wire::encode(e));
    }
    // Nobody reads the job's stdin any more: what is queued and what comes is dropped.
    if (r.rank == spec_.stdin_rank) stdin_.close();
    check_done();
  }

  void check_done() {
    if (!have_spec_ || finished_ || !ranks_.all_reported()) return;
    // Every rank is gone; anything still tagged with the job (setsid daemons a rank left
    // behind) goes too, before we say we are done.
    sweep_job(tag_, ranks_.running_pgids(), sweep_);
    ranks_.cancel_timers();
    exit_timer_.cancel();
    sampling_.stop();
    finished_ = true;
    // Nobody to serve another attempt: the front end is gone (it said so by EOF or silence).
    if (spec_.keep_serving && !front_gone_) {
      // Another attempt may follow on this connection: the guard stays, heartbeats go on.
      guard_.forget_pgids();
      queue(wire::encode(wire::Done{find_free_port()}));
      return;
    }
    guard_.release();
    beat_timer_.cancel();
    queue(wire::encode(wire::Done{}));
    if (output_idle_now()) stop();
  }

  void wait_signal() {
    signals_.async_wait([this](std::error_code ec, int signo) {
      if (ec) return;
      // ferryd itself is being stopped: take the ranks with it.
      if (exit_code_ == 0) exit_code_ = 128 + signo;
      front_lost();
      wait_signal();
    });
  }

  // The front end vanished (its stream closed or broke, or it fell silent) or ferryd was
  // told to stop: stop the ranks and exit; nobody is left to report to. The ranks get
  // the job's --kill-grace between SIGTERM and SIGKILL, as when the front end aborts the
  // job: a rank that checkpoints on SIGTERM can do so even when ferryrun was killed.
  // ferryd exits as soon as they are all gone, so ranks that end on SIGTERM leave at once.
  void front_lost() {
    if (front_gone_) return;
    front_gone_ = true;
    channel_.discard();
    if (routed_) pump_.drop();  // the discarded channel dropped the route's frames
    std::error_code ignored;
    in_.close(ignored);
    beat_timer_.cancel();
    if (exit_code_ == 0 && !finished_) exit_code_ = 1;
    if (!have_spec_ || finished_) return shut_down();  // no rank runs
    ranks_.signal_all(SIGTERM);
    exit_timer_.expires_after(std::chrono::milliseconds(spec_.kill_grace_ms));
    exit_timer_.async_wait([this](std::error_code ec) {
      if (!ec) shut_down();
    });
  }

  // The grace is over: whatever is left of the job is killed, and ferryd exits.
  void shut_down() {
    if (have_spec_) sweep_job(tag_, ranks_.running_pgids(), sweep_);
    ranks_.signal_all(SIGKILL);
    guard_.release();
    stop();
  }

  void fatal(const std::string& why) {
    ::fprintf(stderr, "ferryd: %s\n", why.c_str());
    queue(wire::encode(wire::Failure{-1, why}));
    exit_code_ = 2;
    ranks_.terminate(std::chrono::milliseconds(0));
    front_lost();
  }

  void stop() {
    if (stopped_) return;
    stopped_ = true;
    io_.stop();
  }

  asio::io_context& io_;
  const std::string host_;
  std::unique_ptr<ProcessSpawner> own_spawner_;  // when the options name none
  ProcessSpawner& spawner_;
  const bool subreaper_;
  const Settings settings_;
  SweepScope sweep_;  // what the sweep kills besides tagged processes and the ranks' groups
  asio::posix::stream_descriptor in_;
  std::array<char, size_t{64} * 1024> in_buf_{};
  wire::FrameReader reader_;
  std::chrono::steady_clock::time_point last_heard_ = std::chrono::steady_clock::now();
  OutputPump pump_;                     // stdout
  std::unique_ptr<OutputPump> routed_;  // the direct route, once open
  bool route_offered_ = false;
  std::string route_problem_;
  OutputChannel channel_;
  asio::signal_set signals_;
  asio::steady_timer beat_timer_, exit_timer_;
  StdinFeed stdin_;
  RankLauncher launcher_;
  RankSet ranks_;  // after channel_: its streams are parked there
  Guard guard_;
  KvProxy kv_;
  std::unique_ptr<PmiProxy> pmi_;
  std::vector<std::unique_ptr<PmiProxy>> retired_pmi_;  // earlier attempts'
  PmixService pmix_;
  PreflightPeer preflight_{io_, [this](const std::string& frame) { queue(frame); }};
  SyncReceiver sync_{[this](const std::string& frame) { queue(frame); }};
  RankSampling sampling_{io_, [this] { return ranks_.running_since(); },
                         [this](const std::string& frame) { queue(frame); }, settings_.device_root};

  wire::HostSpec spec_;  // the launcher points into it
  std::string tag_;      // kJobTagVar value of this ferryd's ranks
  bool have_spec_ = false;
  bool front_gone_ = false;
  bool finished_ = false;
  bool stopped_ = false;
  int exit_code_ = 0;
  size_t early_stdin_ = 0;  // Stdin frames before the HostSpec (held for the stdin rank)
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  StateCollector state_{io_, [this](const std::string& frame) { queue(frame); }};  // last: joins
};

Daemon::Daemon(asio::io_context& io, const DaemonOptions& opts)
    : impl_(std::make_unique<Impl>(io, opts)) {}
Daemon::~Daemon() = default;
void Daemon::start() { impl_->start(); }
int Daemon::exit_code() const { return impl_->exit_code(); }

}  // namespace ferry
