// The job controller's watch for hangs: --timeout (the whole job's limit), --stall-timeout (no
// rank printed for a while), and the state report they print, which SIGQUIT asks for too. Each
// ferryd reads its own ranks (state, CPU, stack: daemon/state_collector.cpp); this side asks,
// waits for the answers (a bounded time) and prints them in rank order.
#include <chrono>
#include <csignal>

#include "ferry/frontend/state_report.hpp"
#include "job_follow_up.hpp"

namespace ferry {
namespace {

// How long ferryrun waits for the hosts' answers: above the ferryd's own limits (one CPU
// sample, debuggers side by side under 45 s each), below anyone's patience.
constexpr auto kReportWait = std::chrono::seconds(60);
// How often --stall-timeout looks at the ranks' last output.
constexpr auto kStallCheck = std::chrono::seconds(1);

}  // namespace

void Job::Impl::watch_for_hangs() {
  if (opts_.timeout_s > 0) {
    job_timer_.expires_after(std::chrono::seconds(opts_.timeout_s));
    job_timer_.async_wait([this](std::error_code ec) {
      if (!ec) on_job_timeout();
    });
  }
  if (opts_.stall_timeout_s > 0) check_stall();
}

void Job::Impl::on_job_timeout() {
  if (finished_ || phase_ == Phase::kFinishing) return;
  const std::string limit = "--timeout " + std::to_string(opts_.timeout_s) + " s";
  if (phase_ != Phase::kRunning) {
    attempt_.end.timed_out();
    diag_.error(limit + " reached " +
                (phase_ == Phase::kStarting ? "while starting" : "between attempts") +
                "; stopping");
    launchers_.remote.cancel_all();
    return finish_job();
  }
  if (!attempt_.end.timed_out()) return;  // the job is ending already
  diag_.error(limit + " reached; reading the state of every rank, then stopping the job");
  request_report(limit + " reached", [this] {
    if (follow_up_->stop_job()) return;
    abort_attempt(kill_grace_ms());
  });
}

// Every second: when the latest output of any rank (or its start) is S seconds old, report;
// again after each further S of silence.
void Job::Impl::check_stall() {
  stall_timer_.expires_after(kStallCheck);
  stall_timer_.async_wait([this](std::error_code ec) {
    if (ec || finished_) return;
    check_stall();
    if (phase_ != Phase::kRunning || attempt_.end.aborting() || report_) return;
    Clock::time_point latest{};
    for (size_t m : attempt_.members)
      for (const auto& [rank, seen] : hosts_[m]->output) latest = std::max(latest, seen.last);
    if (latest == Clock::time_point{}) return;  // no rank started yet
    latest = std::max(latest, stall_reported_at_);
    const auto limit = std::chrono::seconds(opts_.stall_timeout_s);
    if (Clock::now() - latest < limit) return;
    stall_reported_at_ = Clock::now();
    const std::string why =
        "no rank printed anything for " + std::to_string(opts_.stall_timeout_s) + " s";
    if (!opts_.stall_abort) return request_report(why, {});
    if (!attempt_.end.timed_out()) return;
    diag_.error(why + " (--stall-abort); reading the state of every rank, then stopping the job");
    request_report(why, [this] {
      if (follow_up_->stop_job()) return;
      abort_attempt(kill_grace_ms());
    });
  });
}

void Job::Impl::on_report_signal() {
  if (phase_ != Phase::kRunning) {
    diag_.error("got SIGQUIT; no rank runs now, so there is no state to report");
    return;
  }
  request_report("on request (SIGQUIT); the job goes on", {});
}

// Asks every host with running ranks for their state; `then` runs once the report is printed.
// A request while one is under way joins it (its `then` is kept).
void Job::Impl::request_report(const std::string& why, std::function<void()> then) {
  if (report_) {
    if (then) report_->then = std::move(then);
    return;
  }
  report_.emplace();
  report_->id = ++report_seq_;
  report_->why = why + ", " + since_start() + " after the start";
  report_->then = std::move(then);
  for (size_t m : attempt_.members) {
    HostLink& h = *hosts_[m];
    if (!h.link || h.closed || h.done) continue;
    h.link->send(wire::encode(wire::StateRequest{report_->id}));
    report_->waiting.insert(m);
  }
  if (report_->waiting.empty()) return print_report();
  report_timer_.expires_after(kReportWait);
  report_timer_.async_wait([this](std::error_code ec) {
    if (!ec && report_) print_report();
  });
}

void Job::Impl::on_state_report(size_t i, const wire::StateReport& r) {
  if (!report_ || r.id != report_->id || !report_->waiting.contains(i)) return;
  for (const wire::RankState& s : r.ranks) report_->ranks[s.rank] = s;
  report_->waiting.erase(i);
  if (report_->waiting.empty()) print_report();
}

// A host lost while its state was asked for will not answer: the report is printed without it,
// once the loss itself was handled.
void Job::Impl::report_host_gone(size_t i) {
  if (!report_ || !report_->waiting.contains(i)) return;
  asio::post(io_, [this, i, id = report_->id, alive = alive_] {
    if (!*alive || !report_ || report_->id != id || !report_->waiting.contains(i)) return;
    report_->waiting.erase(i);
    report_->lost.insert(i);
    if (report_->waiting.empty()) print_report();
  });
}

void Job::Impl::print_report() {
  report_timer_.cancel();
  const auto now = Clock::now();
  std::vector<StateRow> rows;
  for (size_t k = 0; k < attempt_.members.size(); ++k) {
    const HostLink& h = *hosts_[attempt_.members[k]];
    for (const RankSlot& slot : attempt_.placement.hosts[k].ranks) {
      StateRow row;
      row.rank = slot.rank;
      row.host = h.name();
      auto it = report_->ranks.find(slot.rank);
      if (it != report_->ranks.end()) {
        row.answered = true;
        row.state = it->second;
      } else if (report_->lost.contains(attempt_.members[k])) {
        row.missing = "its host was lost";
      } else if (report_->waiting.contains(attempt_.members[k])) {
        row.missing =
            "no answer from its ferryd within " + std::to_string(kReportWait.count()) + " s";
      } else {
        row.missing = attempt_.rank_exited[slot.rank] ? "ended" : "not running";
      }
      if (auto out = h.output.find(slot.rank); out != h.output.end())
        row.since_output_s = std::chrono::duration<double>(now - out->second.last).count();
      rows.push_back(std::move(row));
    }
  }
  out_.flush();
  diag_.raw(format_state_report(diag_.program(), report_->why, std::move(rows)));
  auto then = std::move(report_->then);
  report_.reset();
  if (then) then();
}

}  // namespace ferry
