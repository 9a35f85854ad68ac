#include <csignal>
#include <cstdio>

#include "daemon_impl.hpp"
#include "ferry/daemon/free_port.hpp"

namespace ferry {

void Daemon::Impl::rank_reported(const Rank& r, const wire::Exited& e) {
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

void Daemon::Impl::check_done() {
  if (!have_spec_ || finished_ || !ranks_.all_reported()) return;
  // A warning about this host's name goes out before Done: its lookup, if still under way,
  // is waited for a little, then given up with a warning of its own.
  if (name_check_.pending())
    return name_check_.within(kOwnNameWaitAtEnd, [this](bool returned) {
      if (!returned) launcher_.name_checked(own_name_unanswered(host_, kOwnNameWaitAtEnd));
      check_done();
    });
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

void Daemon::Impl::wait_signal() {
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
void Daemon::Impl::front_lost() {
  if (front_gone_) return;
  front_gone_ = true;
  channel_.discard();
  if (routed_) pump_.drop();  // the discarded channel dropped the route's frames
  std::error_code ignored;
  in_.close(ignored);
  beat_timer_.cancel();
  if (exit_code_ == 0 && !finished_) exit_code_ = 1;
  if (!have_spec_ || finished_) return shut_down();  // no rank runs
  stop_waiting_for_name();
  ranks_.signal_all(SIGTERM);
  exit_timer_.expires_after(std::chrono::milliseconds(spec_.kill_grace_ms));
  exit_timer_.async_wait([this](std::error_code ec) {
    if (!ec) shut_down();
  });
}

// The grace is over: whatever is left of the job is killed, and ferryd exits.
void Daemon::Impl::shut_down() {
  if (have_spec_) sweep_job(tag_, ranks_.running_pgids(), sweep_);
  ranks_.signal_all(SIGKILL);
  guard_.release();
  stop();
}

}  // namespace ferry
