// The job controller: starts every host's ferryd, hands each its HostSpec once all said Hello, and
// decides how the job ends. Each host's link and the decoding of its frames are in host_link.cpp;
// what a host is sent, in host_spec.cpp; the failure reports, in failure_report.cpp.
#include "ferry/frontend/job.hpp"

#include <signal.h>

#include <chrono>
#include <cstdio>

#include "ferry/frontend/failure_report.hpp"
#include "ferry/frontend/host_spec.hpp"
#include "ferry/frontend/job_end.hpp"
#include "ferry/frontend/stdin_forwarder.hpp"
#include "ferry/plan/environment.hpp"
#include "host_link.hpp"
#include "rendezvous_service.hpp"

namespace ferry {
namespace {

using Clock = std::chrono::steady_clock;
// Stdin bytes sent to the stdin rank's ferryd and not yet written to the rank.
constexpr size_t kStdinWindow = 1u << 20;

}  // namespace

class Job::Impl final : private HostEvents {
 public:
  Impl(asio::io_context& io, JobOptions opts, Launchers launchers, OutputSink& out,
       Diagnostics& diag)
      : io_(io), opts_(std::move(opts)), launchers_(launchers), out_(out), diag_(diag) {}
  // Launchers may outlive the job (an SSH session lingers to flush): their callbacks check.
  ~Impl() { *alive_ = false; }

  int run() {
    auto placed = place_ranks(opts_.hosts, opts_.np, opts_.oversubscribe, opts_.placement);
    if (!placed) {
      diag_.error(placed.error().message);
      return 2;
    }
    placement_ = std::move(placed.value());
    if (placement_.oversubscribed)
      diag_.verbose("oversubscribed: some hosts run more ranks than they have slots");
    job_id_ = new_job_id();
    rank_failure_.assign(placement_.world_size, {});
    rank_pid_.assign(placement_.world_size, 0);
    for (size_t i = 0; i < placement_.hosts.size(); ++i) {
      const HostPlan& plan = placement_.hosts[i];
      HostReach reach = decide_host_reach(plan.host, {opts_.ssh_port, opts_.ssh_user});
      HostEvents& events = *this;
      hosts_.push_back(std::make_unique<HostLink>(i, plan, std::move(reach), events, out_));
      const HostLink& h = *hosts_.back();
      if (h.owns(opts_.stdin_rank)) stdin_host_ = static_cast<int>(i);
      diag_.verbose("host " + h.name() + ": ranks " + std::to_string(plan.ranks.front().rank) +
                    ".." + std::to_string(plan.ranks.back().rank) +
                    (h.local ? ", local, no SSH (" : ", SSH (") + h.reach_reason + ")");
    }
    started_at_ = Clock::now();
    signals_.add(SIGINT);
    signals_.add(SIGTERM);
    signals_.add(SIGHUP);
    wait_signal();
    out_.set_flow_handler([this, alive = alive_](bool behind) {
      if (*alive) pause_reading(behind);
    });
    open_all();
    io_.run();
    return end_.exit_status();
  }

 private:
  enum class Phase { kStarting, kRunning, kFinishing };

  // "1.234 s" since the job started, for --verbose.
  std::string since_start() const {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f s",
                  std::chrono::duration<double>(Clock::now() - started_at_).count());
    return buf;
  }

  // ---- starting ------------------------------------------------------------------------

  void open_all() {
    start_timer_.expires_after(std::chrono::seconds(opts_.start_timeout_s));
    start_timer_.async_wait([this](std::error_code ec) {
      if (!ec && phase_ == Phase::kStarting) start_timed_out();
    });
    for (size_t i = 0; i < hosts_.size(); ++i) {
      HostLink& h = *hosts_[i];
      DaemonCommand cmd;
      cmd.ferryd_path = h.plan.host.ferryd.empty() ? opts_.ferryd_path : h.plan.host.ferryd;
      // By index: hosts may share a name (one address, two ports), never an index.
      cmd.on_stderr = [this, i, alive = alive_](const std::string& line) {
        if (*alive) daemon_stderr(i, line);
      };
      Launcher& l = h.local ? launchers_.local : launchers_.remote;
      l.async_open(h.plan.host, cmd,
                   [this, i](Result<std::unique_ptr<Link>> r) { on_open(i, std::move(r)); });
    }
  }

  void start_timed_out() {
    for (auto& h : hosts_) {
      if (h->hello || !h->start_error.empty()) continue;
      h->start_error = h->where() + ": no answer from ferryd within --start-timeout " +
                       std::to_string(opts_.start_timeout_s) + " s";
    }
    launchers_.remote.cancel_all();
    check_started();
  }

  // A line ferryd wrote to its stderr. Shown once that host's ferryd has started; before that it is
  // part of the start error instead.
  void daemon_stderr(size_t i, const std::string& line) {
    HostLink& h = *hosts_[i];
    if (h.hello) diag_.raw(h.name() + ": " + line + "\n");
  }

  void on_open(size_t i, Result<std::unique_ptr<Link>> r) {
    HostLink& h = *hosts_[i];
    h.opening = false;
    if (r && phase_ == Phase::kStarting && h.start_error.empty()) {
      diag_.verbose(r.value()->describe() + ": connected after " + since_start());
      h.attach(std::move(r.value()));
      if (reading_paused_) h.link->pause_reading();
      return;
    }
    if (!r && h.start_error.empty()) h.start_error = r.error().message;
    // Too late (timed out or the job is over): closing makes that ferryd exit.
    if (r) r.value()->close();
    h.closed = true;
    check_started();
  }

  void on_hello(size_t i) override {
    HostLink& h = *hosts_[i];
    diag_.verbose(h.where() + ": ferryd ready on " + h.hello_msg.hostname + " (pid " +
                  std::to_string(h.hello_msg.pid) + ") after " + since_start());
    check_started();
  }

  void check_started() {
    if (phase_ != Phase::kStarting) return maybe_finish();
    size_t failed = 0;
    for (auto& h : hosts_) {
      if (!h->hello && h->start_error.empty()) return;  // still waiting for this one
      failed += !h->start_error.empty();
    }
    start_timer_.cancel();
    if (failed == 0) return launch();
    // Every failing host at once, one line each; the hosts that did start get their stream closed,
    // so their ferryd exits with nothing started.
    for (auto& h : hosts_)
      if (!h->start_error.empty()) diag_.error(h->start_error);
    diag_.error("the job did not start (" + std::to_string(failed) + " of " +
                std::to_string(hosts_.size()) + " hosts failed)");
    end_.start_failed();
    phase_ = Phase::kFinishing;
    for (auto& h : hosts_) h->close();
    maybe_finish();
  }

  // ---- launching -----------------------------------------------------------------------

  void launch() {
    phase_ = Phase::kRunning;
    rdv_ = std::make_unique<RendezvousService>(placement_, [this](const std::string& frame) {
      for (auto& h : hosts_) h->send_running(frame);
    });
    if (auto s = rdv_->init(); !s) diag_.warn(s.error().message);
    choose_network();
    const SharedSpec shared = shared_spec();
    for (size_t i = 0; i < hosts_.size(); ++i) {
      HostLink& h = *hosts_[i];
      HostInputs in{&h.plan, h.local,
                    rdv_->host_environment(i, h.hello_msg.kv_port, opts_.exports)};
      h.link->send(wire::encode(make_host_spec(opts_, placement_, in, shared)));
      h.spec_sent = true;
    }
    if (stdin_host_ >= 0) start_stdin(static_cast<size_t>(stdin_host_));
    if (opts_.heartbeat_s > 0) heartbeat();
  }

  SharedSpec shared_spec() {
    JobEnvironment je;
    je.master_addr = master_address(rdv_->choice(), rank0_address(hosts_));
    const wire::Hello& first = hosts_.front()->hello_msg;
    je.master_port = first.free_port ? first.free_port : 29500;
    je.exported = opts_.exports;
    diag_.verbose("MASTER_ADDR=" + je.master_addr +
                  " MASTER_PORT=" + std::to_string(je.master_port));
    return {job_id_, job_environment(placement_, je), rdv_->secret(),
            pmi_host_config(placement_, 0, job_id_).process_mapping};
  }

  // The frameworks' interface on every host (NCCL_SOCKET_IFNAME, ...), from what each ferryd
  // reported and the address ferryrun reached it at.
  void choose_network() {
    const std::string this_machine = this_machine_address(hosts_);
    std::vector<HostNetwork> nets;
    for (auto& h : hosts_) {
      std::string problem;
      nets.push_back(h->network(this_machine, problem));
      if (!problem.empty()) diag_.verbose(h->name() + ": " + problem);
    }
    const NicChoice& c = rdv_->choose(nets, opts_.network_interfaces);
    for (const auto& line : c.explanation) diag_.verbose(line);
    if (!c.warning.empty()) diag_.warn(c.warning);
  }

  // One interval drives both sides: ferryrun loses a host silent for three intervals here, and each
  // ferryd loses ferryrun the same way (HostSpec::heartbeat_ms). A cut link can keep a TCP
  // connection looking open for many minutes.
  void heartbeat() {
    const auto interval = std::chrono::seconds(opts_.heartbeat_s);
    for (size_t i = 0; i < hosts_.size(); ++i) {
      HostLink& h = *hosts_[i];
      if (h.closed || !h.link) continue;
      if (!reading_paused_ && Clock::now() - h.last_heard > 3 * interval) {
        h.close();
        host_lost(i, "no heartbeat for " + std::to_string(3 * opts_.heartbeat_s) + " s");
        continue;
      }
      h.link->send(wire::encode(wire::Heartbeat{}));
    }
    if (finished_) return;
    beat_timer_.expires_after(interval);
    beat_timer_.async_wait([this](std::error_code ec) {
      if (!ec) heartbeat();
    });
  }

  // The console fell behind, or caught up. Paused, a host's frames (heartbeats too) wait in
  // its link, so its silence says nothing; each gets a fresh start when reading resumes.
  void pause_reading(bool paused) {
    reading_paused_ = paused;
    for (auto& h : hosts_) {
      h->last_heard = Clock::now();
      if (!h->link || h->closed) continue;
      if (paused)
        h->link->pause_reading();
      else
        h->link->resume_reading();
    }
  }

  void start_stdin(size_t host) {
    stdin_ = std::make_unique<StdinForwarder>(
        io_, opts_.stdin_fd, kStdinWindow, [this, host, alive = alive_](std::string chunk) {
          if (!*alive) return;
          HostLink& h = *hosts_[host];
          if (h.link && !h.closed)
            h.link->send(wire::encode(wire::Stdin{std::move(chunk)}));
          else if (stdin_)
            stdin_->stop();  // nobody left to read it
        });
    stdin_->start();
  }

  // ---- what the hosts report -----------------------------------------------------------

  void on_started(size_t, const wire::Started& s) override {
    rank_pid_[s.rank] = s.pid;
    if (!first_start_seen_) {
      first_start_seen_ = true;
      diag_.verbose("first rank started after " + since_start());
    }
  }

  void on_failure(size_t i, const wire::Failure& m) override {
    if (m.rank >= 0 && m.rank < placement_.world_size)
      rank_failure_[m.rank] = m.message;
    else
      diag_.error(hosts_[i]->name() + ": " + m.message);
  }

  void on_stdin_ack(size_t i, uint32_t bytes) override {
    if (stdin_ && static_cast<int>(i) == stdin_host_) stdin_->acknowledged(bytes);
  }

  void on_kv_request(size_t i, const wire::KvRequest& q) override {
    if (rdv_) hosts_[i]->link->send(wire::encode(rdv_->serve(q)));
  }

  void on_pmi_barrier(size_t i, const wire::PmiBarrier& b) override {
    if (!rdv_) return on_broken(i, "PMI barrier before the job started");
    if (auto s = rdv_->pmi_barrier(static_cast<int>(i), b); !s) on_broken(i, s.error().message);
  }

  // ferryd starts its lines with its own host name; say the host once when that is the name the
  // user gave too.
  void on_log(size_t i, const std::string& line) override {
    const std::string label = hosts_[i]->name() + ": ";
    diag_.raw((line.starts_with(label) ? "" : label) + line + "\n");
  }

  void on_done(size_t i) override {
    HostLink& h = *hosts_[i];
    h.done = true;
    diag_.verbose(h.name() + ": all ranks ended after " + since_start());
    h.close();
    maybe_finish();
  }

  // ---- ends ----------------------------------------------------------------------------

  RankWhere where(size_t i, int rank) const {
    return {rank, hosts_[i]->name(), hosts_[i]->slot(rank)->local_rank, rank_pid_[rank]};
  }

  uint32_t kill_grace_ms() const { return static_cast<uint32_t>(opts_.kill_grace_s * 1000); }

  // The first failure: reported, and every other rank is ended.
  void fail_job(const JobFailure& failure) {
    diag_.raw(format_failure_report(diag_.program(), failure));
    abort_job(kill_grace_ms());
  }

  // MPI_Abort: the job ends with the rank's code, whatever the ranks do next.
  void on_pmi_abort(size_t i, const wire::PmiAbort& a) override {
    if (end_.rank_aborted(a.exit_code))
      fail_job(PmiAbortFailure{where(i, a.rank), a.exit_code, a.message});
  }

  void on_exited(size_t i, const wire::Exited& e) override {
    --hosts_[i]->ranks_left;
    out_.close_stream(e.rank, StreamId::kStdout);
    out_.close_stream(e.rank, StreamId::kStderr);
    // A failure ferryd reported (e.g. the PMI socket closed before finalize) fails the rank even
    // when it exited 0.
    const std::string& reason = rank_failure_[e.rank];
    if (end_.rank_ended(e.exit_code, e.signal, !reason.empty()))
      fail_job(RankExitFailure{where(i, e.rank), e.exit_code, e.signal, reason,
                               placement_.world_size > 1, opts_.kill_grace_s});
  }

  // Asks every ferryd to end its ranks; after the grace period plus a margin, closes the links,
  // which makes every ferryd kill what is left and exit on its own.
  void abort_job(uint32_t grace_ms) {
    end_.abort_started();
    for (auto& h : hosts_) h->send_running(wire::encode(wire::Terminate{grace_ms}));
    abort_timer_.expires_after(std::chrono::milliseconds(grace_ms + 3000));
    abort_timer_.async_wait([this](std::error_code ec) {
      if (ec) return;
      for (auto& h : hosts_)
        if (!h->closed) {
          diag_.error(h->name() + ": ranks did not end after SIGKILL; closing the connection");
          h->close();
        }
      maybe_finish();
    });
  }

  void on_closed(size_t i, const std::string& reason) override {
    HostLink& h = *hosts_[i];
    if (h.closed) return;
    h.closed = true;
    if (h.done) return maybe_finish();
    if (phase_ == Phase::kStarting) {
      if (h.start_error.empty())
        h.start_error =
            h.where() + ": " + (reason.empty() ? "ferryd exited before answering" : reason);
      return check_started();
    }
    host_lost(i, reason.empty() ? "ferryd ended without reporting its ranks" : reason);
  }

  void on_broken(size_t i, const std::string& why) override {
    HostLink& h = *hosts_[i];
    const bool starting = phase_ == Phase::kStarting && !h.hello;
    if (starting) h.start_error = h.where() + ": " + why;
    h.close();
    if (starting) return check_started();
    host_lost(i, why);
  }

  void host_lost(size_t i, const std::string& why) {
    HostLink& h = *hosts_[i];
    for (auto& r : h.plan.ranks) {
      out_.close_stream(r.rank, StreamId::kStdout);
      out_.close_stream(r.rank, StreamId::kStderr);
    }
    if (end_.host_lost(h.ranks_left)) fail_job(HostLostFailure{h.name(), why, h.ranks_left});
    h.ranks_left = 0;
    maybe_finish();
  }

  void maybe_finish() {
    for (auto& h : hosts_)
      if (!h->closed || h->opening) return;
    if (finished_) return;
    finished_ = true;
    *alive_ = false;
    if (stdin_) stdin_->stop();
    out_.flush();
    signals_.cancel();
    start_timer_.cancel();
    abort_timer_.cancel();
    beat_timer_.cancel();
    io_.stop();
  }

  // ---- signals -------------------------------------------------------------------------

  void wait_signal() {
    signals_.async_wait([this](std::error_code ec, int signo) {
      if (ec) return;
      on_signal(signo);
      wait_signal();
    });
  }

  // First signal: forwarded to every rank; ranks that survive it are ended like an aborted job
  // after the grace period. Second: every rank is killed at once.
  void on_signal(int signo) {
    const bool first = end_.interrupted(signo);
    if (phase_ == Phase::kStarting) {
      diag_.error("got " + signal_name(signo) + " while starting; stopping");
      phase_ = Phase::kFinishing;
      launchers_.remote.cancel_all();
      for (auto& h : hosts_) h->close();
      return maybe_finish();
    }
    if (!first) {
      diag_.error("got " + signal_name(signo) + " again; killing every rank now");
      return abort_job(0);
    }
    diag_.error("got " + signal_name(signo) +
                "; forwarding it to every rank (again to kill them at once)");
    for (auto& h : hosts_) h->send_running(wire::encode(wire::Signal{signo}));
    abort_timer_.expires_after(std::chrono::milliseconds(kill_grace_ms()));
    abort_timer_.async_wait([this](std::error_code ec) {
      if (!ec) abort_job(0);
    });
  }

  asio::io_context& io_;
  JobOptions opts_;
  Launchers launchers_;
  OutputSink& out_;
  Diagnostics& diag_;
  asio::signal_set signals_{io_};
  asio::steady_timer start_timer_{io_}, abort_timer_{io_}, beat_timer_{io_};
  Placement placement_;
  std::string job_id_;
  HostLinks hosts_;
  std::vector<int> rank_pid_;              // 0 until its Started
  std::vector<std::string> rank_failure_;  // ferryd's reason, "" none
  Phase phase_ = Phase::kStarting;
  JobEnd end_;
  Clock::time_point started_at_;
  bool first_start_seen_ = false;
  bool finished_ = false;
  bool reading_paused_ = false;  // the console is behind: no link is read
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  std::unique_ptr<StdinForwarder> stdin_;
  int stdin_host_ = -1;  // the host of the stdin rank; -1 none
  std::unique_ptr<RendezvousService> rdv_;
};

Job::Job(asio::io_context& io, JobOptions opts, Launchers launchers, OutputSink& out,
         Diagnostics& diag)
    : impl_(std::make_unique<Impl>(io, std::move(opts), launchers, out, diag)) {}
Job::~Job() = default;
int Job::run() { return impl_->run(); }

}  // namespace ferry
