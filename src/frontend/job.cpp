#include "ferry/frontend/job.hpp"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <random>

#include "ferry/frontend/host_reach.hpp"
#include "ferry/frontend/stdin_forwarder.hpp"
#include "ferry/plan/environment.hpp"
#include "ferry/plan/placement.hpp"
#include "ferry/rendezvous/framework_env.hpp"
#include "ferry/rendezvous/interfaces.hpp"
#include "ferry/wire/messages.hpp"
#include "rendezvous_service.hpp"

namespace ferry {
namespace {

using Clock = std::chrono::steady_clock;
// Stdin bytes sent to the stdin rank's ferryd and not yet written to the rank.
constexpr size_t kStdinWindow = 1u << 20;

std::string signal_name(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  std::string name = abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
  const char* desc = ::strsignal(sig);
  if (desc) name += std::string(" (") + desc + ")";
  return name;
}

std::string new_job_id() {
  std::random_device rd;
  std::uniform_int_distribution<uint64_t> d;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(d(rd)));
  return buf;
}

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Frames the failure reports, as Open MPI frames its own (people look for the rule).
constexpr const char* kRule =
    "--------------------------------------------------------------------------\n";

std::string fmt_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f s", s);
  return buf;
}

}  // namespace

class Job::Impl {
 public:
  Impl(asio::io_context& io, JobOptions opts, Launchers launchers, OutputSink& out,
       Diagnostics& diag)
      : io_(io), opts_(std::move(opts)), launchers_(launchers), out_(out), diag_(diag),
        signals_(io), start_timer_(io), abort_timer_(io), beat_timer_(io) {}
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
    rank_host_.assign(placement_.world_size, -1);
    rank_local_.assign(placement_.world_size, 0);
    rank_failure_.assign(placement_.world_size, {});
    rank_pid_.assign(placement_.world_size, 0);
    for (size_t i = 0; i < placement_.hosts.size(); ++i) {
      auto h = std::make_unique<HostState>();
      h->plan = placement_.hosts[i];
      HostReach reach = decide_host_reach(h->plan.host, {opts_.ssh_port, opts_.ssh_user});
      h->local = reach.local;
      h->reach_reason = std::move(reach.reason);
      for (auto& r : h->plan.ranks) {
        rank_host_[r.rank] = static_cast<int>(i);
        rank_local_[r.rank] = r.local_rank;
      }
      h->ranks_left = static_cast<int>(h->plan.ranks.size());
      hosts_.push_back(std::move(h));
    }
    if (diag_.is_verbose()) {
      for (auto& h : hosts_)
        diag_.verbose("host " + h->name() + ": ranks " +
                      std::to_string(h->plan.ranks.front().rank) + ".." +
                      std::to_string(h->plan.ranks.back().rank) +
                      (h->local ? ", local, no SSH (" : ", SSH (") + h->reach_reason + ")");
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
    return exit_status();
  }

 private:
  struct HostState {
    HostPlan plan;
    bool local = false;
    std::string reach_reason;  // why local or SSH, for --verbose
    std::unique_ptr<Link> link;
    wire::FrameReader reader;
    bool opening = true;      // open in flight
    bool hello = false;
    wire::Hello hello_msg;
    std::string start_error;  // set when the host failed to start
    bool spec_sent = false;
    bool done = false;        // ferryd said Done
    Clock::time_point last_heard = Clock::now();
    bool closed = false;      // link ended (or never opened)
    int ranks_left = 0;
    std::string name() const { return plan.label; }
  };

  // ---- starting ------------------------------------------------------------------------

  void open_all() {
    start_timer_.expires_after(std::chrono::seconds(opts_.start_timeout_s));
    start_timer_.async_wait([this](std::error_code ec) {
      if (ec || phase_ != Phase::kStarting) return;
      for (auto& h : hosts_) {
        if (h->hello || !h->start_error.empty()) continue;
        std::string where = h->link ? h->link->describe() : h->name();
        h->start_error = where + ": no answer from ferryd within --start-timeout " +
                         std::to_string(opts_.start_timeout_s) + " s";
      }
      launchers_.remote.cancel_all();
      check_started();
    });
    for (size_t i = 0; i < hosts_.size(); ++i) {
      HostState& h = *hosts_[i];
      DaemonCommand cmd;
      cmd.ferryd_path = h.plan.host.ferryd.empty() ? opts_.ferryd_path : h.plan.host.ferryd;
      // By index: hosts may share a name (one address, two ports), never an index.
      cmd.on_stderr = [this, i, alive = alive_](const std::string& line) {
        if (*alive) daemon_stderr(i, line);
      };
      Launcher& l = h.local ? launchers_.local : launchers_.remote;
      l.async_open(h.plan.host, cmd, [this, i](Result<std::unique_ptr<Link>> r) {
        on_open(i, std::move(r));
      });
    }
  }

  // A line ferryd wrote to its stderr. Shown once that host's ferryd has started; before
  // that it is part of the start error instead.
  void daemon_stderr(size_t i, const std::string& line) {
    HostState& h = *hosts_[i];
    if (h.hello) diag_.raw(h.name() + ": " + line + "\n");
  }

  void on_open(size_t i, Result<std::unique_ptr<Link>> r) {
    HostState& h = *hosts_[i];
    h.opening = false;
    if (!r) {
      if (h.start_error.empty()) h.start_error = r.error().message;
      h.closed = true;
      check_started();
      return;
    }
    if (phase_ != Phase::kStarting || !h.start_error.empty()) {
      // Too late (timed out or the job is over): closing makes that ferryd exit.
      r.value()->close();
      h.closed = true;
      check_started();
      return;
    }
    h.link = std::move(r.value());
    diag_.verbose(h.link->describe() + ": connected after " +
                  fmt_seconds(seconds_since(started_at_)));
    h.link->start([this, i](std::string_view bytes) { on_data(i, bytes); },
                  [this, i](const std::string& reason) { on_closed(i, reason); });
    if (reading_paused_) h.link->pause_reading();
  }

  void on_data(size_t i, std::string_view bytes) {
    HostState& h = *hosts_[i];
    h.last_heard = Clock::now();
    h.reader.feed(bytes);
    for (;;) {
      auto f = h.reader.next_view();
      if (!f) {
        host_broken(i, f.error().message);
        return;
      }
      if (!*f) break;
      if (h.hello) handle_frame(i, **f);
      else handle_hello(i, **f);
      if (h.closed) return;
    }
    out_.flush();
  }

  void handle_hello(size_t i, const wire::FrameView& f) {
    HostState& h = *hosts_[i];
    auto hello = wire::decode<wire::Hello>(f);
    if (!hello) return host_broken(i, hello.error().message);
    h.hello = true;
    h.hello_msg = std::move(hello.value());
    diag_.verbose(h.link->describe() + ": ferryd ready on " + h.hello_msg.hostname + " (pid " +
                  std::to_string(h.hello_msg.pid) + ") after " +
                  fmt_seconds(seconds_since(started_at_)));
    check_started();
  }

  // Output is most of the traffic: its bytes go to the sink without leaving the reader.
  void handle_frame(size_t i, const wire::FrameView& f) {
    auto msg = wire::decode_to_front(f);
    if (!msg) return host_broken(i, msg.error().message);
    std::visit(wire::Overloaded{
                   [&](const wire::OutputView& o) {
                     if (!valid_rank_of(i, o.rank))
                       return host_broken(i, "output for a foreign rank");
                     out_.write(o.rank, static_cast<StreamId>(o.stream), o.data);
                   },
                   [&](const wire::Started& s) { on_started(i, s); },
                   [&](const wire::Exited& e) {
                     if (!valid_rank_of(i, e.rank))
                       return host_broken(i, "exit of a foreign rank");
                     on_rank_exit(i, e);
                   },
                   [&](const wire::Failure& m) { on_failure(i, m); },
                   [](const wire::Heartbeat&) {},  // reading it was the point (last_heard)
                   [&](const wire::StdinAck& a) {
                     if (stdin_ && i == stdin_host_) stdin_->acknowledged(a.bytes);
                   },
                   [&](const wire::KvRequest& q) {
                     if (rdv_) hosts_[i]->link->send(wire::encode(rdv_->serve(q)));
                   },
                   [&](const wire::PmiBarrier& b) {
                     if (auto s = rdv_->pmi_barrier(static_cast<int>(i), b); !s)
                       host_broken(i, s.error().message);
                   },
                   [&](const wire::PmiAbort& a) {
                     if (!valid_rank_of(i, a.rank))
                       return host_broken(i, "abort of a foreign rank");
                     on_pmi_abort(i, a);
                   },
                   [&](const wire::Log& l) { on_log(i, l.line); },
                   [&](const wire::Done&) { on_done(i); },
               },
               *msg);
  }

  void on_started(size_t i, const wire::Started& s) {
    if (!valid_rank_of(i, s.rank)) return host_broken(i, "start of a foreign rank");
    rank_pid_[s.rank] = s.pid;
    if (!first_start_seen_) {
      first_start_seen_ = true;
      diag_.verbose("first rank started after " + fmt_seconds(seconds_since(started_at_)));
    }
  }

  void on_failure(size_t i, const wire::Failure& m) {
    if (m.rank >= 0 && m.rank < placement_.world_size) rank_failure_[m.rank] = m.message;
    else diag_.error(hosts_[i]->name() + ": " + m.message);
  }

  // ferryd starts its lines with its own host name; say the host once when that is the
  // name the user gave too.
  void on_log(size_t i, const std::string& line) {
    const std::string label = hosts_[i]->name() + ": ";
    diag_.raw((line.starts_with(label) ? "" : label) + line + "\n");
  }

  void on_done(size_t i) {
    HostState& h = *hosts_[i];
    h.done = true;
    diag_.verbose(h.name() + ": all ranks ended after " + fmt_seconds(seconds_since(started_at_)));
    h.link->close();
    h.closed = true;
    maybe_finish();
  }

  bool valid_rank_of(size_t i, int rank) const {
    return rank >= 0 && rank < placement_.world_size && rank_host_[rank] == static_cast<int>(i);
  }

  void check_started() {
    if (phase_ != Phase::kStarting) {
      maybe_finish();
      return;
    }
    for (auto& h : hosts_)
      if (!h->hello && h->start_error.empty()) return;  // still waiting for this one
    start_timer_.cancel();
    bool failed = false;
    for (auto& h : hosts_) failed |= !h->start_error.empty();
    if (failed) {
      // Every failing host at once, one line each; the hosts that did start get their
      // stream closed, so their ferryd exits with nothing started.
      for (auto& h : hosts_)
        if (!h->start_error.empty()) diag_.error(h->start_error);
      diag_.error("the job did not start (" + std::to_string(count_failed()) + " of " +
                  std::to_string(hosts_.size()) + " hosts failed)");
      start_failed_ = true;
      phase_ = Phase::kFinishing;
      for (auto& h : hosts_) close_host(*h);
      maybe_finish();
      return;
    }
    launch();
  }

  size_t count_failed() const {
    size_t n = 0;
    for (auto& h : hosts_) n += !h->start_error.empty();
    return n;
  }

  // The frameworks' interface on every host (NCCL_SOCKET_IFNAME, ...), from what each
  // ferryd reported and the address ferryrun reached it at.
  void choose_network() {
    std::string this_machine;  // a local host in a mixed job is reached at this address
    for (auto& h : hosts_)
      if (h->link && !h->local && this_machine.empty()) this_machine = h->link->local_address();
    std::vector<HostNetwork> nets;
    for (auto& h : hosts_) {
      HostNetwork n;
      n.label = h->name();
      n.reached_at = h->local ? this_machine : h->link->peer_address();
      if (auto ifs = interfaces_from_lines(h->hello_msg.interfaces)) n.interfaces = *ifs;
      else diag_.verbose(h->name() + ": " + ifs.error().message);
      nets.push_back(std::move(n));
    }
    const NicChoice& c = rdv_->choose(nets, opts_.network_interfaces);
    for (const auto& line : c.explanation) diag_.verbose(line);
    if (!c.warning.empty()) diag_.warn(c.warning);
  }

  void launch() {
    phase_ = Phase::kRunning;
    HostState& first = *hosts_.front();
    rdv_ = std::make_unique<RendezvousService>(placement_, [this](const std::string& frame) {
      for (auto& h : hosts_)
        if (h->link && !h->closed && h->spec_sent) h->link->send(frame);
    });
    if (auto s = rdv_->init(); !s) diag_.warn(s.error().message);
    choose_network();
    JobEnvironment je;
    je.master_addr = ferry::master_address(rdv_->choice(), master_address());
    je.master_port = first.hello_msg.free_port ? first.hello_msg.free_port : 29500;
    je.exported = opts_.exports;
    auto common = job_environment(placement_, je);
    diag_.verbose("MASTER_ADDR=" + je.master_addr + " MASTER_PORT=" +
                  std::to_string(je.master_port));
    const std::string pmi_mapping = pmi_host_config(placement_, 0, job_id_).process_mapping;
    int stdin_host = opts_.stdin_rank >= 0 && opts_.stdin_rank < placement_.world_size
                         ? rank_host_[opts_.stdin_rank]
                         : -1;
    for (size_t i = 0; i < hosts_.size(); ++i) {
      HostState& h = *hosts_[i];
      wire::HostSpec spec;
      spec.job_id = job_id_;
      spec.wdir = opts_.wdir;
      spec.wdir_fallback = !opts_.wdir_explicit && !h.local;
      spec.argv = opts_.command;
      spec.env = common;
      auto host_env = rdv_->host_environment(i, h.hello_msg.kv_port, opts_.exports);
      spec.env.insert(spec.env.end(), host_env.begin(), host_env.end());
      for (auto& r : h.plan.ranks) {
        wire::RankLaunch rl{r.rank, rank_environment(placement_, h.plan, r), {}};
        if (opts_.torch_local_rank_arg) rl.extra_args = with_local_rank_arg({}, r.local_rank);
        spec.ranks.push_back(std::move(rl));
      }
      spec.secret = rdv_->secret();
      spec.pmi = true;
      spec.world_size = placement_.world_size;
      spec.pmi_process_mapping = pmi_mapping;
      spec.stdin_rank = static_cast<int>(i) == stdin_host ? opts_.stdin_rank : -1;
      spec.kill_grace_ms = static_cast<uint32_t>(opts_.kill_grace_s * 1000);
      spec.verbose = opts_.verbose;
      spec.binding = opts_.binding;
      spec.heartbeat_ms = static_cast<uint32_t>(opts_.heartbeat_s * 1000);
      h.link->send(wire::encode(spec));
      h.spec_sent = true;
    }
    if (stdin_host >= 0) start_stdin(static_cast<size_t>(stdin_host));
    if (opts_.heartbeat_s > 0) heartbeat();
  }

  // Heartbeats both ways: a host silent for three intervals is lost (a cut link can keep
  // a TCP connection looking open for many minutes).
  void heartbeat() {
    const auto interval = std::chrono::seconds(opts_.heartbeat_s);
    for (size_t i = 0; i < hosts_.size(); ++i) {
      HostState& h = *hosts_[i];
      if (h.closed || !h.link) continue;
      if (!reading_paused_ && Clock::now() - h.last_heard > 3 * interval) {
        std::string why = "no heartbeat for " + std::to_string(3 * opts_.heartbeat_s) + " s";
        close_host(h);
        host_lost(i, why);
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
      if (paused) h->link->pause_reading();
      else h->link->resume_reading();
    }
  }

  // MASTER_ADDR: where every rank can reach the rank-0 host.
  std::string master_address() const {
    const HostState& first = *hosts_.front();
    std::string peer = first.link ? first.link->peer_address() : "";
    if (!peer.empty()) return peer;
    // Rank 0 is on this machine: loopback if every host is, else this machine's address
    // on the connection to a remote host.
    for (auto& h : hosts_)
      if (h->link && !h->local) {
        std::string a = h->link->local_address();
        if (!a.empty()) return a;
      }
    return "127.0.0.1";
  }

  // ---- stdin ---------------------------------------------------------------------------

  void start_stdin(size_t host) {
    stdin_host_ = host;
    stdin_ = std::make_unique<StdinForwarder>(
        io_, opts_.stdin_fd, kStdinWindow, [this, host, alive = alive_](std::string chunk) {
          if (!*alive) return;
          HostState& h = *hosts_[host];
          if (h.link && !h.closed) h.link->send(wire::encode(wire::Stdin{std::move(chunk)}));
          else if (stdin_) stdin_->stop();  // nobody left to read it
        });
    stdin_->start();
  }

  // ---- ends ----------------------------------------------------------------------------

  // MPI_Abort: the job ends with the rank's code, whatever the ranks do next.
  void on_pmi_abort(size_t i, const wire::PmiAbort& a) {
    if (aborting_) return;
    first_failure_ = true;
    failure_status_ = a.exit_code;
    std::string block =
        kRule + diag_.program() + ": rank " + std::to_string(a.rank) + " on host " +
        hosts_[i]->name() + " (local rank " + std::to_string(rank_local_[a.rank]) +
        (rank_pid_[a.rank] ? ", pid " + std::to_string(rank_pid_[a.rank]) : "") +
        ") called MPI_Abort (PMI abort) with exit code " + std::to_string(a.exit_code) + ".\n";
    if (!a.message.empty()) block += "  message: " + a.message + "\n";
    block += "The job was aborted.\n";
    block += kRule;
    diag_.raw(block);
    abort_job(static_cast<uint32_t>(opts_.kill_grace_s * 1000));
  }

  void on_rank_exit(size_t i, const wire::Exited& e) {
    HostState& h = *hosts_[i];
    --h.ranks_left;
    out_.close_stream(e.rank, StreamId::kStdout);
    out_.close_stream(e.rank, StreamId::kStderr);
    // A failure ferryd reported (e.g. the PMI socket closed before finalize) fails the rank
    // even when it exited 0.
    const bool reported = !rank_failure_[e.rank].empty();
    bool failed = e.signal != 0 || e.exit_code != 0 || reported;
    if (!failed || aborting_) return;
    if (user_signal_ && e.signal == user_signal_) return;
    first_failure_ = true;
    failure_status_ = e.signal ? 128 + e.signal : (e.exit_code ? e.exit_code : 1);
    std::string what = e.signal ? "was killed by " + signal_name(e.signal)
                                : "exited with status " + std::to_string(e.exit_code);
    std::string block =
        kRule + diag_.program() + ": rank " + std::to_string(e.rank) + " on host " + h.name() +
        " (local rank " + std::to_string(rank_local_[e.rank]) +
        (rank_pid_[e.rank] ? ", pid " + std::to_string(rank_pid_[e.rank]) : "") + ") " +
        what + ".\n";
    if (!rank_failure_[e.rank].empty())
      block += "  reason: " + rank_failure_[e.rank] + "\n";
    if (placement_.world_size > 1) {
      char grace[32];
      std::snprintf(grace, sizeof grace, "%g", opts_.kill_grace_s);
      block += "The job was aborted: the other ranks get SIGTERM, then SIGKILL after " +
               std::string(grace) + " s.\n";
    }
    block += kRule;
    diag_.raw(block);
    abort_job(static_cast<uint32_t>(opts_.kill_grace_s * 1000));
  }

  // Asks every ferryd to end its ranks; after the grace period plus a margin, closes the
  // links, which makes every ferryd kill what is left and exit on its own.
  void abort_job(uint32_t grace_ms) {
    aborting_ = true;
    for (auto& h : hosts_)
      if (h->link && !h->closed && h->spec_sent) h->link->send(wire::encode(wire::Terminate{grace_ms}));
    abort_timer_.expires_after(std::chrono::milliseconds(grace_ms + 3000));
    abort_timer_.async_wait([this](std::error_code ec) {
      if (ec) return;
      for (auto& h : hosts_)
        if (!h->closed) {
          diag_.error(h->name() + ": ranks did not end after SIGKILL; closing the connection");
          close_host(*h);
        }
      maybe_finish();
    });
  }

  void on_closed(size_t i, const std::string& reason) {
    HostState& h = *hosts_[i];
    if (h.closed) return;
    h.closed = true;
    if (h.done) return maybe_finish();
    if (phase_ == Phase::kStarting) {
      if (h.start_error.empty())
        h.start_error = h.link->describe() + ": " +
                        (reason.empty() ? "ferryd exited before answering" : reason);
      check_started();
      return;
    }
    host_lost(i, reason.empty() ? "ferryd ended without reporting its ranks" : reason);
  }

  void host_broken(size_t i, const std::string& why) {
    HostState& h = *hosts_[i];
    if (phase_ == Phase::kStarting && !h.hello) {
      h.start_error = (h.link ? h.link->describe() : h.name()) + ": " + why;
      close_host(h);
      check_started();
      return;
    }
    close_host(h);
    host_lost(i, why);
  }

  void host_lost(size_t i, const std::string& why) {
    HostState& h = *hosts_[i];
    for (auto& r : h.plan.ranks) {
      out_.close_stream(r.rank, StreamId::kStdout);
      out_.close_stream(r.rank, StreamId::kStderr);
    }
    if (h.ranks_left > 0 && !aborting_ && !user_signal_) {
      host_lost_ = true;
      diag_.raw(
          kRule + diag_.program() + ": lost host " + h.name() + " (" + why + ") with " +
          std::to_string(h.ranks_left) + " rank(s) still running.\n" +
          "The job was aborted; ferryd on that host kills its ranks when its connection "
          "ends.\n" + kRule);
      abort_job(static_cast<uint32_t>(opts_.kill_grace_s * 1000));
    }
    h.ranks_left = 0;
    maybe_finish();
  }

  void close_host(HostState& h) {
    if (h.link) h.link->close();
    h.closed = true;
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

  void on_signal(int signo) {
    if (phase_ == Phase::kStarting) {
      user_signal_ = signo;
      diag_.error("got " + signal_name(signo) + " while starting; stopping");
      phase_ = Phase::kFinishing;
      launchers_.remote.cancel_all();
      for (auto& h : hosts_) close_host(*h);
      maybe_finish();
      return;
    }
    if (user_signal_) {
      diag_.error("got " + signal_name(signo) + " again; killing every rank now");
      abort_job(0);
      return;
    }
    user_signal_ = signo;
    diag_.error("got " + signal_name(signo) +
                "; forwarding it to every rank (again to kill them at once)");
    for (auto& h : hosts_)
      if (h->link && !h->closed && h->spec_sent)
        h->link->send(wire::encode(wire::Signal{signo}));
    // Ranks that survive the signal are ended like an aborted job after the grace period.
    abort_timer_.expires_after(std::chrono::milliseconds(
        static_cast<int64_t>(opts_.kill_grace_s * 1000)));
    abort_timer_.async_wait([this](std::error_code ec) {
      if (!ec) abort_job(0);
    });
  }

  int exit_status() const {
    if (start_failed_) return user_signal_ ? 128 + user_signal_ : 1;
    if (first_failure_) return failure_status_;
    if (host_lost_) return 255;
    if (user_signal_) return 128 + user_signal_;
    return 0;
  }

  enum class Phase { kStarting, kRunning, kFinishing };

  asio::io_context& io_;
  JobOptions opts_;
  Launchers launchers_;
  OutputSink& out_;
  Diagnostics& diag_;
  asio::signal_set signals_;
  asio::steady_timer start_timer_, abort_timer_, beat_timer_;
  Placement placement_;
  std::string job_id_;
  std::vector<std::unique_ptr<HostState>> hosts_;
  std::vector<int> rank_host_, rank_local_, rank_pid_;
  std::vector<std::string> rank_failure_;
  Phase phase_ = Phase::kStarting;
  Clock::time_point started_at_;
  bool first_start_seen_ = false;
  bool aborting_ = false;
  bool first_failure_ = false;
  int failure_status_ = 0;
  bool host_lost_ = false;
  bool start_failed_ = false;
  bool finished_ = false;
  bool reading_paused_ = false;  // the console is behind: no link is read
  int user_signal_ = 0;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  std::unique_ptr<StdinForwarder> stdin_;
  size_t stdin_host_ = 0;
  std::unique_ptr<RendezvousService> rdv_;
};

Job::Job(asio::io_context& io, JobOptions opts, Launchers launchers, OutputSink& out,
         Diagnostics& diag)
    : impl_(std::make_unique<Impl>(io, std::move(opts), launchers, out, diag)) {}
Job::~Job() = default;
int Job::run() { return impl_->run(); }

}  // namespace ferry
