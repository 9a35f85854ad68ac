#include "rank_set.hpp"

#include <sys/wait.h>

#include <algorithm>
#include <charconv>
#include <csignal>
#include <cstdint>

#include "ferry/common/environ.hpp"
#include "ferry/common/read_text_file.hpp"

namespace ferry {
namespace {

// After a rank is reaped, how long its pipes may stay open (held by a background child)
// before its exit is reported anyway.
constexpr auto kDrainAfterExit = std::chrono::milliseconds(1000);

}  // namespace

Rank::Rank(OutputChannel& channel, asio::io_context& io, int32_t global_rank, size_t index,
           const std::function<void()>& ended)
    : rank(global_rank),
      local(index),
      out(channel, global_rank, StreamId::kStdout, ended),
      err(channel, global_rank, StreamId::kStderr, ended),
      drain(io),
      kill(io) {}

RankSet::RankSet(asio::io_context& io, ProcessSpawner& spawner, OutputChannel& channel,
                 Reported reported)
    : io_(io),
      spawner_(spawner),
      channel_(channel),
      reported_(std::move(reported)),
      kill_timer_(io) {}

Rank& RankSet::add(int32_t rank, size_t local) {
  const size_t i = ranks_.size();
  ranks_.push_back(std::make_unique<Rank>(channel_, io_, rank, local, [this, i, g = generation_] {
    if (g == generation_) ended(*ranks_[i]);
  }));
  return *ranks_.back();
}

void RankSet::started(Rank& r, pid_t pid, UniqueFd out, UniqueFd err) {
  r.pid = pid;
  r.started_at = std::chrono::steady_clock::now();
  r.state = Rank::State::kRunning;
  by_pid_[pid] = &r;
  r.out.open(std::move(out));
  r.err.open(std::move(err));
}

void RankSet::not_started(Rank& r, int code, int signal) {
  r.state = Rank::State::kReported;
  wire::Exited e;
  e.rank = r.rank;
  e.exit_code = code;
  e.signal = signal;
  report(r, e);
}

void RankSet::reap() {
  while (auto child = spawner_.reap()) {
    auto it = by_pid_.find(child->pid);
    if (it == by_pid_.end()) continue;  // not a rank (the guard, a failed exec)
    Rank& r = *it->second;
    by_pid_.erase(it);
    r.state = Rank::State::kReaped;
    r.status = child->status;
    r.wall = std::chrono::steady_clock::now() - r.started_at;
    r.cpu_us = child->cpu_us;
    r.max_rss_kb = child->max_rss_kb;
    if (holds_open(r)) arm_drain(r);
    maybe_report(r);
  }
}

// A background child of the rank may hold its pipes for as long as it likes: its output is
// forwarded for a while, then the rank's exit is reported regardless. While the front end is
// behind (bytes wait in the pump for it), the period starts again: what the pipes still hold
// may be the rank's own last output, written before it exited and waiting for the front end.
void RankSet::arm_drain(Rank& r) {
  r.drain.expires_after(kDrainAfterExit);
  r.drain.async_wait([this, &r](std::error_code ec) {
    if (ec) return;
    if (channel_.holding() && holds_open(r)) return arm_drain(r);
    r.out.close();
    r.err.close();
    if (pmi_) pmi_->close_rank(r.rank);
    maybe_report(r);
  });
}

void RankSet::pmi_closed(int32_t rank) {
  for (auto& r : ranks_)
    if (r->rank == rank) maybe_report(*r);
}

void RankSet::ended(Rank& r) { maybe_report(r); }

bool RankSet::holds_open(const Rank& r) const {
  return r.out.is_open() || r.err.is_open() || (pmi_ && pmi_->is_open(r.rank));
}

// A rank's exit is reported once it was reaped and everything it wrote was forwarded: its
// pipes reached EOF (or the drain ran out) and its PMI socket closed.
void RankSet::maybe_report(Rank& r) {
  if (r.state != Rank::State::kReaped || holds_open(r)) return;
  r.drain.cancel();
  r.state = Rank::State::kReported;
  wire::Exited e;
  e.rank = r.rank;
  if (WIFSIGNALED(r.status))
    e.signal = WTERMSIG(r.status);
  else
    e.exit_code = WEXITSTATUS(r.status);
  const auto clamp = [](uint64_t v) {
    return static_cast<uint32_t>(std::min<uint64_t>(v, UINT32_MAX));
  };
  e.wall_ms = clamp(
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(r.wall).count()));
  e.cpu_ms = clamp(r.cpu_us / 1000);
  e.max_rss_kb = clamp(r.max_rss_kb);
  report(r, e);
}

void RankSet::report(Rank& r, const wire::Exited& e) {
  if (reported_) reported_(r, e);
}

void RankSet::signal_all(int signo) {
  for (auto& r : ranks_)
    if (r->state == Rank::State::kRunning) spawner_.signal_group(r->pid, signo);
}

void RankSet::terminate(std::chrono::milliseconds grace) {
  const bool first = !terminating_;
  terminating_ = true;
  if (grace.count() <= 0) {
    signal_all(SIGKILL);
    kill_timer_.cancel();
    return;
  }
  if (!first) return;
  signal_all(SIGTERM);
  kill_timer_.expires_after(grace);
  kill_timer_.async_wait([this](std::error_code ec) {
    if (!ec) signal_all(SIGKILL);
  });
}

void RankSet::stop(Rank& r, std::chrono::milliseconds grace) {
  if (r.state == Rank::State::kPending) return not_started(r, 0, SIGKILL);
  if (r.state != Rank::State::kRunning) return;
  if (grace.count() <= 0) return spawner_.signal_group(r.pid, SIGKILL);
  spawner_.signal_group(r.pid, SIGTERM);
  r.kill.expires_after(grace);
  r.kill.async_wait([this, &r](std::error_code ec) {
    if (!ec && r.state == Rank::State::kRunning) spawner_.signal_group(r.pid, SIGKILL);
  });
}

void RankSet::stop(const std::vector<int32_t>& ranks, std::chrono::milliseconds grace) {
  for (int32_t rank : ranks)
    if (Rank* r = find(rank)) stop(*r, grace);
}

Rank* RankSet::find(int32_t rank) {
  for (auto& r : ranks_)
    if (r->rank == rank) return r.get();
  return nullptr;
}

Rank* RankSet::find_process(pid_t pid) {
  // A rank's threads share its pid; a process it started has it among its parents. The walk
  // ends at init, at ferryd (a subreaper adopts the orphans) or after a bounded depth.
  for (int depth = 0; depth < 64 && pid > 1; ++depth) {
    if (auto it = by_pid_.find(pid); it != by_pid_.end()) return it->second;
    auto stat = read_text_file("/proc/" + std::to_string(pid) + "/stat", 4096, "stat file");
    if (!stat) return nullptr;
    const auto fields = stat_fields(*stat);
    int ppid = 0;
    if (fields.size() < 2 ||
        std::from_chars(fields[1].data(), fields[1].data() + fields[1].size(), ppid).ec !=
            std::errc())
      return nullptr;
    pid = ppid;
  }
  return nullptr;
}

bool RankSet::all_reported() const {
  for (const auto& r : ranks_)
    if (r->state != Rank::State::kReported) return false;
  return true;
}

std::vector<pid_t> RankSet::started_pids() const {
  std::vector<pid_t> v;
  for (const auto& r : ranks_)
    if (r->pid > 0) v.push_back(r->pid);
  return v;
}

std::vector<std::pair<int32_t, pid_t>> RankSet::running() const {
  std::vector<std::pair<int32_t, pid_t>> v;
  for (const auto& r : ranks_)
    if (r->state == Rank::State::kRunning) v.emplace_back(r->rank, r->pid);
  return v;
}

std::vector<RankSet::Running> RankSet::running_since() const {
  std::vector<Running> v;
  for (const auto& r : ranks_)
    if (r->state == Rank::State::kRunning) v.push_back({r->rank, r->pid, r->started_at});
  return v;
}

std::vector<pid_t> RankSet::running_pgids() const {
  std::vector<pid_t> v;
  for (const auto& r : ranks_)
    if (r->state == Rank::State::kRunning) v.push_back(r->pid);
  return v;
}

void RankSet::cancel_timers() {
  kill_timer_.cancel();
  for (auto& r : ranks_) {
    r->drain.cancel();
    r->kill.cancel();
  }
}

void RankSet::clear() {
  cancel_timers();
  for (auto& r : ranks_) retired_.push_back(std::move(r));
  ranks_.clear();
  by_pid_.clear();
  terminating_ = false;
  ++generation_;
}

}  // namespace ferry
