// The job controller, first half: starts every host's ferryd, hears what the hosts report, and
// handles signals. A host's failures are job_failures.cpp's; what comes next, job_attempts.cpp's.
#include "ferry/frontend/job.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>

#include "job_follow_up.hpp"

namespace ferry {
namespace {

// Where a host was declared, for the line that says it failed, when that is a line of a file
// (a hostfile's or the job file's "hosts.txt:3"): the line the user has to fix.
std::string declared_at(const HostEntry& h) {
  const size_t colon = h.origin.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == h.origin.size()) return "";
  for (size_t k = colon + 1; k < h.origin.size(); ++k)
    if (h.origin[k] < '0' || h.origin[k] > '9') return "";
  return " (" + h.origin + ")";
}

// Stdin bytes sent to the stdin rank's ferryd and not yet written to the rank.
constexpr size_t kStdinWindow = 1u << 20;

}  // namespace

Job::Impl::Impl(asio::io_context& io, JobOptions opts, Launchers launchers, OutputSink& out,
                Diagnostics& diag, std::optional<Placement> placed)
    : io_(io),
      opts_(std::move(opts)),
      launchers_(launchers),
      out_(out),
      diag_(diag),
      placed_before_(std::move(placed)) {
  if (opts_.elastic.on())
    follow_up_ = std::make_unique<HorovodElastic>(*this);
  else
    follow_up_ = std::make_unique<RestartAttempts>(*this, opts_.restart_limits());
}

Job::Impl::~Impl() { *alive_ = false; }

int Job::Impl::run() {
  auto placed = placed_before_ ? Result<Placement>(std::move(*placed_before_)) : place_job(opts_);
  placed_before_.reset();
  if (!placed) {
    diag_.error(placed.error().message);
    return 2;
  }
  full_ = std::move(placed.value());
  if (full_.oversubscribed)
    diag_.verbose("oversubscribed: some hosts run more ranks than they have slots");
  job_id_ = new_job_id();
  for (size_t i = 0; i < full_.hosts.size(); ++i) {
    const HostPlan& plan = full_.hosts[i];
    HostReach reach = decide_host_reach(plan.host, {opts_.ssh_port, opts_.ssh_user});
    HostEvents& events = *this;
    hosts_.push_back(std::make_unique<HostLink>(i, plan, std::move(reach), events, out_));
    const HostLink& h = *hosts_.back();
    if (h.owns(opts_.stdin_rank)) stdin_host_ = static_cast<int>(i);
    diag_.verbose("host " + h.name() + ": ranks " + std::to_string(plan.ranks.front().rank) + ".." +
                  std::to_string(plan.ranks.back().rank) +
                  (h.local ? ", local, no SSH (" : ", " + opts_.remote_via + " (") +
                  h.reach_reason + ")");
  }
  follow_up_->announce();
  started_at_ = Clock::now();
  if (opts_.watching()) {
    watch_ = std::make_unique<JobWatch>(io_, opts_, diag_, started_at_);
    for (size_t i = 0; i < hosts_.size(); ++i) {
      watch_->host(i, hosts_[i]->name());
      hosts_[i]->tail = tail_for_links();
    }
  }
  signals_.add(SIGINT);
  signals_.add(SIGTERM);
  if (!opts_.ignore_hangup) signals_.add(SIGHUP);
  signals_.add(SIGQUIT);
  wait_signal();
  passed_signals_.add(SIGUSR1);
  passed_signals_.add(SIGUSR2);
  wait_passed_signal();
  watch_for_hangs();
  out_.set_flow_handler([this, alive = alive_](bool behind) {
    if (*alive) pause_reading(behind);
  });
  out_.set_reader_gone_handler([this, alive = alive_] {
    if (*alive) reader_gone();
  });
  read_sync_tree();
  open_all();
  io_.run();
  const int status = attempt_.end.exit_status();
  if (watch_) watch_->finish(status);
  // After a failure always: what every rank used and how it ended, in one table; not for a job
  // whose ranks never started (the failed launch said why).
  if (summary_.any_reported() && (opts_.summary != JobOptions::Summary::kOnFailure || status != 0))
    diag_.raw(summary_.format(diag_.program(), opts_.summary == JobOptions::Summary::kRanks));
  return status;
}

// "1.234 s" since the job started, for --verbose.
std::string Job::Impl::since_start() const {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f s",
                std::chrono::duration<double>(Clock::now() - started_at_).count());
  return buf;
}

// ---- starting ---------------------------------------------------------------------------

void Job::Impl::open_all() {
  start_timer_.expires_after(std::chrono::seconds(opts_.start_timeout_s));
  start_timer_.async_wait([this](std::error_code ec) {
    if (!ec && phase_ == Phase::kStarting) start_timed_out();
  });
  for (size_t i = 0; i < hosts_.size(); ++i) open_host(i);
  // A start that takes a moment shows how far it got, on one line (a terminal only).
  progress_timer_.expires_after(std::chrono::milliseconds(300));
  progress_timer_.async_wait([this](std::error_code ec) {
    if (ec || phase_ != Phase::kStarting) return;
    progress_on_ = true;
    show_progress();
  });
}

// "ferryrun: connected 87/128, 2 failed": redrawn as hosts answer or fail.
void Job::Impl::show_progress() {
  if (!progress_on_) return;
  size_t connected = 0, failed = 0;
  for (auto& h : hosts_) {
    connected += h->hello;
    failed += !h->start_error.empty();
  }
  diag_.progress(diag_.program() + ": connected " + std::to_string(connected) + "/" +
                 std::to_string(hosts_.size()) +
                 (failed ? ", " + std::to_string(failed) + " failed" : ""));
}

void Job::Impl::open_host(size_t i) {
  HostLink& h = *hosts_[i];
  DaemonCommand cmd;
  cmd.ferryd_path = h.plan.host.ferryd.empty() ? opts_.ferryd_path : h.plan.host.ferryd;
  // By index: hosts may share a name (one address, two ports), never an index.
  cmd.on_stderr = [this, i, alive = alive_](const std::string& line) {
    if (*alive) daemon_stderr(i, line);
  };
  Launcher& l = h.local ? launchers_.local : launchers_.remote;
  l.async_open(h.plan.host, cmd, [this, i, alive = alive_](Result<std::unique_ptr<Link>> r) {
    if (*alive) return on_open(i, std::move(r));
    if (r) r.value()->close();  // the job is gone: that ferryd exits
  });
}

void Job::Impl::start_timed_out() {
  for (auto& h : hosts_) {
    if (h->hello || !h->start_error.empty() || h->closed) continue;
    h->start_error = h->where() + ": no answer from ferryd within --start-timeout " +
                     std::to_string(opts_.start_timeout_s) + " s";
  }
  launchers_.remote.cancel_all();
  if (phase_ == Phase::kBetween) return check_reopened();
  check_started();
}

// A line ferryd wrote to its stderr. Shown once that host's ferryd has started; before that it is
// part of the start error instead.
void Job::Impl::daemon_stderr(size_t i, const std::string& line) {
  HostLink& h = *hosts_[i];
  if (h.hello) diag_.raw(h.name() + ": " + line + "\n");
}

void Job::Impl::on_open(size_t i, Result<std::unique_ptr<Link>> r) {
  HostLink& h = *hosts_[i];
  h.opening = false;
  const bool wanted =
      phase_ == Phase::kStarting || phase_ == Phase::kBetween ||
      (phase_ == Phase::kRunning && follow_up_->adds_hosts() && !follow_up_->stopping());
  if (r && wanted && h.start_error.empty()) {
    diag_.verbose(r.value()->describe() + ": connected after " + since_start());
    h.attach(offer_route(std::move(r.value())));
    if (reading_paused_) h.link->pause_reading();
    return;
  }
  if (!r && h.start_error.empty()) h.start_error = r.error().message;
  // Too late (timed out or the job is over): closing makes that ferryd exit.
  if (r) r.value()->close();
  h.closed = true;
  if (phase_ == Phase::kRunning && follow_up_->adds_hosts()) return host_lost(i, h.start_error);
  if (phase_ == Phase::kBetween) return check_reopened();
  check_started();
}

// Over SSH, ferryd is offered a direct route for its output (sshd then relays none of it);
// the offer is ferryd's first frame, so its output moves before the ranks start.
std::unique_ptr<Link> Job::Impl::offer_route(std::unique_ptr<Link> link) {
  if (!opts_.direct_output || !link->relays_output()) return link;
  OutputRouter::Offer offer;
  std::string problem;
  link = router_.route(std::move(link), offer, problem);
  if (!problem.empty()) {
    diag_.verbose(link->describe() + ": output stays on SSH: " + problem);
    return link;
  }
  link->send(
      wire::encode(wire::OutputRoute{offer.addresses, offer.port, offer.secret, offer.token}));
  return link;
}

void Job::Impl::on_hello(size_t i) {
  HostLink& h = *hosts_[i];
  diag_.verbose(h.where() + ": ferryd ready on " + h.hello_msg.hostname + " (pid " +
                std::to_string(h.hello_msg.pid) + ") after " + since_start());
  if (phase_ == Phase::kRunning && follow_up_->host_ready(i)) return;
  if (phase_ == Phase::kBetween) return check_reopened();
  if (phase_ == Phase::kStarting) probe_sync(i);
  start_pmix_early();
  check_started();
}

void Job::Impl::check_started() {
  if (phase_ != Phase::kStarting) return maybe_finish();
  show_progress();
  size_t failed = 0;
  for (auto& h : hosts_) {
    if (!h->hello && h->start_error.empty()) return;  // still waiting for this one
    failed += !h->start_error.empty();
  }
  start_timer_.cancel();
  progress_timer_.cancel();
  progress_on_ = false;
  diag_.end_progress();
  if (failed == 0) {
    std::vector<size_t> all(hosts_.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    return launch_attempt(std::move(all), "");
  }
  if (opts_.check) return start_check();  // the table says which hosts failed, and why
  // Every failing host at once, one line each; the hosts that did start get their stream closed,
  // so their ferryd exits with nothing started.
  for (auto& h : hosts_)
    if (!h->start_error.empty()) diag_.error(h->start_error + declared_at(h->plan.host));
  diag_.error("the job did not start (" + std::to_string(failed) + " of " +
              std::to_string(hosts_.size()) + " hosts failed)");
  attempt_.end.start_failed();
  phase_ = Phase::kFinishing;
  for (auto& h : hosts_) h->close();
  maybe_finish();
}

// One interval drives both sides: ferryrun loses a host silent for three intervals here, and each
// ferryd loses ferryrun the same way (HostSpec::heartbeat_ms). A cut link can keep a TCP connection
// looking open for many minutes. Hosts that wait between attempts are watched too.
void Job::Impl::heartbeat() {
  const auto interval = std::chrono::seconds(opts_.heartbeat_s);
  for (size_t i = 0; i < hosts_.size(); ++i) {
    HostLink& h = *hosts_[i];
    if (h.closed || !h.link || !h.hello) continue;
    if (follow_up_->standing_by(i)) h.last_heard = Clock::now();
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

// The console fell behind, or caught up. Paused, a host's frames (heartbeats too) wait in its link,
// so its silence says nothing; each gets a fresh start when reading resumes.
void Job::Impl::pause_reading(bool paused) {
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

// Nobody reads ferryrun's stdout any more (`ferryrun ... | head`): the job ends as a pipeline's
// writer does, by SIGPIPE. Its ranks are stopped as in an abort (SIGTERM, SIGKILL after
// --kill-grace) and ferryrun exits with 128+SIGPIPE; no attempt follows.
void Job::Impl::reader_gone() {
  if (!attempt_.end.interrupted(SIGPIPE)) return;  // a signal is ending the job already
  if (phase_ == Phase::kStarting || phase_ == Phase::kBetween) {
    launchers_.remote.cancel_all();
    return finish_job();
  }
  if (phase_ != Phase::kRunning) return;
  if (follow_up_->stop_job()) return;
  abort_attempt(kill_grace_ms());
}

void Job::Impl::start_stdin(size_t host) {
  stdin_ = std::make_unique<StdinForwarder>(
      io_, opts_.stdin_fd, kStdinWindow, [this, host, alive = alive_](std::string chunk) {
        if (!*alive) return;
        HostLink& h = *hosts_[host];
        if (h.link && !h.closed && attempt_.number == 0)
          h.link->send(wire::encode(wire::Stdin{std::move(chunk)}));
        else if (stdin_)
          stdin_->stop();  // nobody left to read it
      });
  stdin_->start();
}

// ---- what the hosts report ----------------------------------------------------------------

void Job::Impl::on_started(size_t i, const wire::Started& s) {
  attempt_.rank_pid[s.rank] = s.pid;
  if (watch_) watch_->rank_started(attempt_.number, s.rank, rank_label(s.rank), i);
  hosts_[i]->output[s.rank] = {Clock::now(), {}, 0};  // silence is counted from the start
  if (!first_start_seen_) {
    first_start_seen_ = true;
    diag_.verbose("first rank started after " + since_start());
    if (opts_.top) open_top();
  }
  if (attempt_.number == 0 && opts_.on_all_started &&
      std::all_of(attempt_.rank_pid.begin(), attempt_.rank_pid.end(),
                  [](int pid) { return pid != 0; })) {
    auto call = std::exchange(opts_.on_all_started, nullptr);
    call();
  }
}

void Job::Impl::open_top() {
  std::string command;
  for (const auto& a : opts_.command) command += (command.empty() ? "" : " ") + a;
  diag_.end_progress();
  top_ = std::make_unique<TopScreen>(io_, *watch_, opts_.hold_console, command);
  if (!top_->open()) {
    top_.reset();
    diag_.warn("--top: this terminal cannot show the view; the job goes on without it");
  }
}

void Job::Impl::on_samples(size_t i, const wire::Samples& m) {
  if (watch_)
    watch_->samples(*hosts_[i], i, m, [this](int rank) { return "rank " + rank_label(rank); });
}

// A rank as the view names it: its number, or "spawn1:0" for MPI_Comm_spawn's processes.
std::string Job::Impl::rank_label(int rank) const {
  auto it = attempt_.spawned.find(rank);
  if (it == attempt_.spawned.end()) return std::to_string(rank);
  const std::string& name = it->second;  // "spawned process 1:0"
  return "spawn" + name.substr(name.rfind(' ') + 1);
}

void Job::Impl::on_failure(size_t i, const wire::Failure& m) {
  if (m.rank >= 0 && m.rank < attempt_.placement.world_size)
    attempt_.rank_failure[m.rank] = m.message;
  else
    diag_.error(hosts_[i]->name() + ": " + m.message);
}

void Job::Impl::on_stdin_ack(size_t i, uint32_t bytes) {
  if (stdin_ && static_cast<int>(i) == stdin_host_) stdin_->acknowledged(bytes);
}

void Job::Impl::on_kv_request(size_t i, const wire::KvRequest& q) {
  if (follow_up_->kv(i, q)) return;
  if (rdv_) hosts_[i]->link->send(wire::encode(rdv_->serve(q)));
}

void Job::Impl::on_pmi_barrier(size_t i, const wire::PmiBarrier& b) {
  if (!rdv_ || !in_attempt(i)) return on_broken(i, "PMI barrier outside a running job");
  if (auto s = rdv_->pmi_barrier(hosts_[i]->attempt_index, b); !s) on_broken(i, s.error().message);
}

void Job::Impl::on_pmix_fence(size_t i, const wire::PmixFence& f) {
  if (!rdv_ || !in_attempt(i)) return on_broken(i, "PMIx fence outside a running job");
  if (auto s = rdv_->pmix_fence(hosts_[i]->attempt_index, f); !s) on_broken(i, s.error().message);
}

void Job::Impl::on_pmix_modex_request(size_t i, const wire::PmixModexRequest& r) {
  if (!rdv_ || !in_attempt(i)) return on_broken(i, "PMIx request outside a running job");
  rdv_->pmix_modex_request(hosts_[i]->attempt_index, r);
}

void Job::Impl::on_pmix_dynamic(size_t i, const wire::PmixDynamic& m) {
  if (!rdv_ || !in_attempt(i)) return on_broken(i, "PMIx request outside a running job");
  if (auto s = rdv_->pmix_dynamic(hosts_[i]->attempt_index, m); !s) on_broken(i, s.error().message);
}

void Job::Impl::on_pmix_modex_reply(size_t i, const wire::PmixModexReply& r) {
  if (!rdv_ || !in_attempt(i)) return on_broken(i, "PMIx answer outside a running job");
  if (auto s = rdv_->pmix_modex_reply(hosts_[i]->attempt_index, r); !s)
    on_broken(i, s.error().message);
}

// ferryd starts its lines with its own host name; say the host once when that is the name the user
// gave too.
void Job::Impl::on_log(size_t i, const std::string& line) {
  const std::string label = hosts_[i]->name() + ": ";
  diag_.raw((line.starts_with(label) ? "" : label) + line + "\n");
}

void Job::Impl::on_done(size_t i, const wire::Done&) {
  HostLink& h = *hosts_[i];
  h.done = true;
  diag_.verbose(h.name() + ": all ranks ended after " + since_start());
  // A ferryd that may serve another attempt waits for it; any other exits now.
  if (!follow_up_->restartable()) h.close();
  check_attempt_over();
}

// ---- signals ------------------------------------------------------------------------------

void Job::Impl::wait_signal() {
  signals_.async_wait([this](std::error_code ec, int signo) {
    if (ec) return;
    on_signal(signo);
    wait_signal();
  });
}

// SIGUSR1 and SIGUSR2 (Slurm's warning of preemption, checkpoint requests) go to every
// running rank, each time; the job goes on.
void Job::Impl::wait_passed_signal() {
  passed_signals_.async_wait([this](std::error_code ec, int signo) {
    if (ec) return;
    if (phase_ == Phase::kRunning) {
      diag_.verbose("got " + signal_name(signo) + "; forwarding it to every rank");
      for (size_t m : attempt_.members) hosts_[m]->send_running(wire::encode(wire::Signal{signo}));
    } else {
      diag_.verbose("got " + signal_name(signo) + " while no rank runs; not forwarded");
    }
    wait_passed_signal();
  });
}

// First signal: forwarded to every rank; ranks that survive it are ended like an aborted job after
// the grace period. Second: every rank is killed at once. No attempt follows either.
void Job::Impl::on_signal(int signo) {
  if (signo == SIGQUIT) return on_report_signal();
  const bool first = attempt_.end.interrupted(signo);
  if (phase_ == Phase::kStarting || phase_ == Phase::kBetween) {
    diag_.error("got " + signal_name(signo) +
                (phase_ == Phase::kStarting ? " while starting" : " between attempts") +
                "; stopping");
    launchers_.remote.cancel_all();
    return finish_job();
  }
  if (!first) {
    diag_.error("got " + signal_name(signo) + " again; killing every rank now");
    return abort_attempt(0);
  }
  diag_.error("got " + signal_name(signo) +
              "; forwarding it to every rank (again to kill them at once)");
  for (size_t m : attempt_.members) hosts_[m]->send_running(wire::encode(wire::Signal{signo}));
  abort_timer_.expires_after(std::chrono::milliseconds(kill_grace_ms()));
  abort_timer_.async_wait([this](std::error_code ec) {
    if (!ec) abort_attempt(0);
  });
}

Job::Job(asio::io_context& io, JobOptions opts, Launchers launchers, OutputSink& out,
         Diagnostics& diag, std::optional<Placement> placed)
    : impl_(std::make_unique<Impl>(io, std::move(opts), launchers, out, diag, std::move(placed))) {}
Job::~Job() = default;
int Job::run() { return impl_->run(); }

}  // namespace ferry
