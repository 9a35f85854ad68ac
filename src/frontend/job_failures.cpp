// The job controller, its failures: a rank that exited non-zero or aborted, a host whose
// connection closed or broke, and when an attempt is over. Which of them ends the job and what
// comes next is job_attempts.cpp's.
#include <chrono>

#include "ferry/frontend/failure_report.hpp"
#include "job_follow_up.hpp"

namespace ferry {
namespace {

// The report's first line of words (it opens with a rule), without the program's name.
std::string first_line_of_report(const std::string& report, const std::string& program) {
  size_t at = 0;
  while (at < report.size()) {
    const size_t end = std::min(report.find('\n', at), report.size());
    std::string line = report.substr(at, end - at);
    at = end + 1;
    if (line.empty() || line.find_first_not_of('-') == std::string::npos) continue;
    if (line.starts_with(program + ": ")) line.erase(0, program.size() + 2);
    return line;
  }
  return report;
}

}  // namespace

// ---- failures -----------------------------------------------------------------------------

RankWhere Job::Impl::where(size_t i, int rank) const {
  auto spawned = attempt_.spawned.find(rank);
  return {rank, hosts_[i]->name(), hosts_[i]->slot(rank)->local_rank, attempt_.rank_pid[rank],
          spawned == attempt_.spawned.end() ? std::string() : spawned->second};
}

uint32_t Job::Impl::kill_grace_ms() const {
  return static_cast<uint32_t>(opts_.kill_grace_s * 1000);
}

// The attempt's first failure: reported, and every other rank is ended.
void Job::Impl::fail_attempt(const JobFailure& failure) {
  const std::string report = format_failure_report(
      diag_.program(), failure, follow_up_->restartable() ? attempt_.number : -1);
  diag_.raw(report);
  if (watch_) watch_->mark("failure", first_line_of_report(report, diag_.program()));
  abort_attempt(kill_grace_ms());
}

// MPI_Abort: the attempt ends with the rank's code, whatever the ranks do next.
void Job::Impl::on_pmi_abort(size_t i, const wire::PmiAbort& a) {
  summary_.aborted(a.rank, a.exit_code);
  if (attempt_.end.rank_aborted(a.exit_code))
    fail_attempt(PmiAbortFailure{where(i, a.rank), a.exit_code, a.message});
}

void Job::Impl::on_exited(size_t i, const wire::Exited& e) {
  --hosts_[i]->ranks_left;
  out_.close_stream(e.rank, StreamId::kStdout);
  out_.close_stream(e.rank, StreamId::kStderr);
  attempt_.rank_exited[e.rank] = true;
  if (watch_)
    watch_->rank_ended(*hosts_[i], e,
                       e.exit_code != 0 || e.signal != 0 || !attempt_.rank_failure[e.rank].empty());
  summary_.exited(e.rank, e.exit_code, e.signal, uint64_t{e.wall_ms} * 1000,
                  uint64_t{e.cpu_ms} * 1000, e.max_rss_kb);
  if (follow_up_->exited(i, e)) return;
  // A failure ferryd reported (e.g. the PMI socket closed before finalize) fails the rank even when
  // it exited 0.
  const std::string& reason = attempt_.rank_failure[e.rank];
  const bool ok = e.exit_code == 0 && e.signal == 0 && reason.empty();
  if (ok && !attempt_.end.aborting()) attempt_.rank_succeeded = true;
  if (attempt_.end.rank_ended(e.exit_code, e.signal, !reason.empty())) {
    RankExitFailure f;
    f.where = where(i, e.rank);
    f.exit_code = e.exit_code;
    f.signal = e.signal;
    f.reason = reason;
    f.others_aborted = attempt_.placement.world_size > 1;
    f.kill_grace_s = opts_.kill_grace_s;
    f.error_file = e.error_file;
    fail_attempt(f);
  }
}

// Asks every ferryd of the attempt to end its ranks; after the grace period plus a margin, a host
// that did not report them all is given up on: its link closes, which makes its ferryd kill what is
// left and exit on its own.
void Job::Impl::abort_attempt(uint32_t grace_ms) {
  attempt_.end.abort_started();
  for (size_t m : attempt_.members)
    hosts_[m]->send_running(wire::encode(wire::Terminate{grace_ms}));
  abort_timer_.expires_after(std::chrono::milliseconds(grace_ms + 3000));
  abort_timer_.async_wait([this](std::error_code ec) {
    if (ec) return;
    for (size_t m : attempt_.members) {
      HostLink& h = *hosts_[m];
      if (h.closed || h.done) continue;
      diag_.error(h.name() + ": ranks did not end after SIGKILL; closing the connection");
      h.close();
      host_lost(m, "its ranks did not end after SIGKILL");
    }
    check_attempt_over();
  });
}

void Job::Impl::on_closed(size_t i, const std::string& reason) {
  HostLink& h = *hosts_[i];
  if (h.closed) return;
  h.closed = true;
  const bool starting = !h.hello && (phase_ == Phase::kStarting || phase_ == Phase::kBetween);
  if (starting) {
    if (h.start_error.empty())
      h.start_error =
          h.where() + ": " + (reason.empty() ? "ferryd exited before answering" : reason);
    return phase_ == Phase::kBetween ? check_reopened() : check_started();
  }
  host_lost(i, reason.empty() ? "ferryd ended without reporting its ranks" : reason);
}

void Job::Impl::on_broken(size_t i, const std::string& why) {
  HostLink& h = *hosts_[i];
  const bool starting = !h.hello && (phase_ == Phase::kStarting || phase_ == Phase::kBetween);
  if (starting) h.start_error = h.where() + ": " + why;
  h.close();
  if (starting) return phase_ == Phase::kBetween ? check_reopened() : check_started();
  host_lost(i, why);
}

// The host's link ended (or it fell silent) after it said Hello. While its ranks run, that fails
// the attempt; either way the host is out of the job until it is opened again.
void Job::Impl::host_lost(size_t i, const std::string& why) {
  HostLink& h = *hosts_[i];
  report_host_gone(i);
  if (phase_ == Phase::kFinishing) return maybe_finish();
  if (follow_up_->restartable() && !h.lost && (h.done || !in_attempt(i)))
    diag_.error("lost host " + h.name() + " (" + why + ") between attempts");
  h.lost = true;
  h.lost_why = why;
  if (rdv_ && in_attempt(i)) rdv_->host_lost(hosts_[i]->attempt_index);
  if (!in_attempt(i)) follow_up_->host_lost(i);  // its ranks never started
  if (phase_ == Phase::kBetween) return check_reopened();
  if (!in_attempt(i) || h.done) return check_attempt_over();
  if (watch_) watch_->host_lost(h, i, why);
  for (auto& r : h.plan.ranks) {
    out_.close_stream(r.rank, StreamId::kStdout);
    out_.close_stream(r.rank, StreamId::kStderr);
  }
  if (follow_up_->host_lost(i)) h.ranks_left = 0;
  if (attempt_.end.host_lost(h.ranks_left))
    fail_attempt(HostLostFailure{h.name(), why, h.ranks_left});
  h.ranks_left = 0;
  check_attempt_over();
}

void Job::Impl::maybe_finish() {
  for (auto& h : hosts_)
    if (!h->closed || h->opening) return;
  if (finished_) return;
  finished_ = true;
  *alive_ = false;
  if (stdin_) stdin_->stop();
  if (top_) top_->close();
  out_.flush();
  signals_.cancel();
  passed_signals_.cancel();
  start_timer_.cancel();
  abort_timer_.cancel();
  beat_timer_.cancel();
  progress_timer_.cancel();
  diag_.end_progress();
  io_.stop();
}

}  // namespace ferry
