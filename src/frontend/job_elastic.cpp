// The job controller's elastic mode (horovodrun --host-discovery-script, or --min-np with fixed
// hosts): one attempt runs for the whole job, and its workers reset in rounds, as horovod's elastic
// driver runs them. A worker that resets asks `GET /rank_and_size/<host>:<local_rank>`; the request
// waits here until every worker of the world asked, exited or was lost (ElasticRounds decides what
// follows). Then the hosts of failed workers are dropped (their ferryd stops their ranks, the job
// goes on), the store is emptied for the new world, and every waiting worker gets its new rank.
#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "job_follow_up.hpp"

namespace ferry {

double Job::Impl::HorovodElastic::now_s() {
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

ElasticSlot Job::Impl::HorovodElastic::slot_of(size_t i, int rank) const {
  const RankSlot* s = job_.hosts_[i]->slot(rank);
  return {job_.hosts_[i]->name(), s ? s->local_rank : -1};
}

// The first world is the first attempt's placement: the hosts the discovery script listed (or the
// fixed -H hosts), each filled in turn (the command line made -np every slot, up to --max-np).
void Job::Impl::HorovodElastic::begin() {
  const ElasticOptions& e = job_.opts_.elastic;
  rounds_ = std::make_unique<ElasticRounds>(ElasticRounds::Limits{
      e.min_np, e.max_np, e.reset_limit, e.cooldown_low_s, e.cooldown_high_s});
  std::vector<DiscoveredHost> found;
  for (const auto& h : job_.full_.hosts) {
    found.push_back({h.label, h.host.slots});
    admitted_.insert(h.label);
  }
  if (e.fixed_hosts) fixed_hosts_ = found;
  listed_ = found;
  rounds_->update_hosts(found, now_s());
  if (auto w = rounds_->assign(); !w) job_.diag_.error("elastic: " + w.error().message);
  job_.diag_.verbose(
      "elastic: " + std::to_string(rounds_->world().size()) + " workers; resets at most " +
      (e.reset_limit >= 0 ? std::to_string(e.reset_limit) : std::string("unlimited")));
  discover_later();
}

// What the hub asks. Before begin() (the hosts are still starting) nothing is the rounds'.

bool Job::Impl::HorovodElastic::host_ready(size_t i) {
  if (!rounds_) return false;
  HostLink& h = *job_.hosts_[i];
  if (standing_by(i)) {
    // A new host, opened before any round counts it: its tree first, then the rounds may use it.
    if (job_.sync_before_join(i)) return true;
    job_.diag_.verbose("elastic: " + h.name() + " is ready to join");
    ready_.insert(h.name());
    if (!stopping_) apply_listing();
    return true;
  }
  join(i);
  return true;
}

bool Job::Impl::HorovodElastic::standing_by(size_t i) const {
  const auto s = standby_.find(job_.hosts_[i]->name());
  return s != standby_.end() && s->second == i;
}

bool Job::Impl::HorovodElastic::exited(size_t i, const wire::Exited& e) {
  if (!rounds_) return false;
  if (!stopping_) worker_exited(i, e);
  return true;
}

bool Job::Impl::HorovodElastic::host_lost(size_t i) {
  if (!rounds_) return false;
  const HostLink& h = *job_.hosts_[i];
  if (standing_by(i)) {
    // A new host, or one back, that could not be opened (or lost before it joined): no round
    // counted it, so no worker waits for it. Tried again while it is listed, after a pause.
    standby_.erase(h.name());
    ready_.erase(h.name());
    open_failed_[h.name()] = now_s();
    if (stopping_) return true;
    job_.diag_.warn(
        "elastic: " + h.name() + " is left out for now (" +
        (h.lost_why.empty() ? std::string("its ferryd ended") : h.lost_why) + "); tried again in " +
        std::to_string(kRetryOpenS) + " s" +
        (job_.opts_.elastic.fixed_hosts ? "" : " if the discovery script still lists it"));
    apply_listing();
    return true;
  }
  if (!stopping_) workers_lost(i);
  return true;
}

bool Job::Impl::HorovodElastic::stop_job() {
  if (!rounds_) return false;
  stop(0, "");
  return true;
}

void Job::Impl::HorovodElastic::attempt_done() {
  if (rounds_ && !stopping_) all_exited();
}

// The one attempt is the job: nothing follows it.
void Job::Impl::HorovodElastic::after_attempt() { job_.finish_job(); }

// A worker that reset asks for its rank: the answer waits for the round's end. Every other request
// is the store's.
bool Job::Impl::HorovodElastic::kv(size_t i, const wire::KvRequest& q) {
  if (!rounds_) return false;
  constexpr std::string_view kPrefix = "/rank_and_size/";
  if (q.method == "PUT" && q.target.starts_with("/worker_addresses/")) worker_address(q);
  if (q.method != "GET" || !q.target.starts_with(kPrefix)) return false;
  const std::string key = q.target.substr(kPrefix.size());
  const size_t colon = key.rfind(':');
  int local_rank = -1;
  if (colon != std::string::npos) local_rank = std::atoi(key.c_str() + colon + 1);
  ElasticSlot slot{key.substr(0, colon == std::string::npos ? key.size() : colon), local_rank};
  if (stopping_) return true;  // its rank is being stopped: no answer
  if (!rounds_->assignment(slot)) {
    // Not in the world (its host was dropped): rank -1 tells it so at once.
    job_.hosts_[i]->link->send(
        wire::encode(wire::KvReply{q.id, 200, ElasticAssignment{}.response()}));
    return true;
  }
  job_.diag_.verbose("elastic: " + key + " is ready for the next round");
  slot_queries_.push_back({i, q.id, slot});
  record(slot, WorkerState::kReady);
  return true;
}

void Job::Impl::HorovodElastic::record(const ElasticSlot& slot, WorkerState state) {
  if (rounds_->record(slot, state)) round_over();
}

void Job::Impl::HorovodElastic::worker_exited(size_t i, const wire::Exited& e) {
  // Stopped on purpose (its slot left the world): neither a failure nor a worker of the round.
  if (stopped_.contains(e.rank)) return;
  const ElasticSlot slot = slot_of(i, e.rank);
  std::erase_if(slot_queries_, [&](const SlotQuery& q) { return q.host == i && q.slot == slot; });
  const auto assigned = rounds_->assignment(slot);
  if (!assigned) return;  // a worker of a dropped host
  const std::string& reason = job_.attempt_.rank_failure[e.rank];
  if (e.exit_code == 0 && e.signal == 0 && reason.empty())
    return record(slot, WorkerState::kSuccess);
  const int status = e.signal ? 128 + e.signal : (e.exit_code ? e.exit_code : 1);
  if (round_failure_status_ == 0) round_failure_status_ = status;
  // Named by its rank in the current world, as its output is tagged (label_workers()).
  const int rank = assigned->rank >= 0 ? assigned->rank : e.rank;
  job_.diag_.raw(job_.diag_.program() + ": rank " + std::to_string(rank) + " on host " +
                 job_.hosts_[i]->name() + " (local rank " + std::to_string(slot.local_rank) +
                 ", pid " + std::to_string(job_.attempt_.rank_pid[e.rank]) + ") " +
                 (e.signal ? "was killed by signal " + std::to_string(e.signal)
                           : "exited with status " + std::to_string(e.exit_code)) +
                 (reason.empty() ? "" : " (" + reason + ")") +
                 "; elastic: its host leaves the job\n");
  record(slot, WorkerState::kFailure);
}

// A lost host's workers that still ran count as failed.
void Job::Impl::HorovodElastic::workers_lost(size_t i) {
  std::vector<ElasticSlot> failed;
  for (const auto& r : job_.hosts_[i]->plan.ranks) {
    if (job_.attempt_.rank_exited[r.rank]) continue;
    job_.attempt_.rank_exited[r.rank] = true;
    if (stopped_.contains(r.rank)) continue;
    const ElasticSlot slot = slot_of(i, r.rank);
    std::erase_if(slot_queries_, [&](const SlotQuery& q) { return q.host == i; });
    if (rounds_->assignment(slot)) failed.push_back(slot);
  }
  if (failed.empty()) return;
  if (round_failure_status_ == 0) round_failure_status_ = 255;
  job_.diag_.raw(job_.diag_.program() + ": lost host " + job_.hosts_[i]->name() +
                 "; elastic: its workers count as failed\n");
  for (const auto& s : failed) {
    if (stopping_) return;
    record(s, WorkerState::kFailure);
  }
}

void Job::Impl::HorovodElastic::round_over() {
  const RoundEnd end = rounds_->end_round(now_s());
  const int failed = round_failure_status_ ? round_failure_status_ : 1;
  switch (end) {
    case RoundEnd::kResume:
      return resume();
    case RoundEnd::kSucceeded:
      return stop(round_failure_status_,
                  round_failure_status_ ? "elastic: a worker finished, another had failed" : "");
    case RoundEnd::kAllFailed:
      return stop(failed, "elastic: every worker failed");
    case RoundEnd::kAllBlacklisted:
      return stop(failed, "elastic: every host of the job has a failed worker");
    case RoundEnd::kResetLimit: {
      const int n = rounds_->resets();
      return stop(failed, "elastic: stopping the job: it reset " + std::to_string(n) +
                              (n == 1 ? " time" : " times") + ", the most --reset-limit " +
                              std::to_string(job_.opts_.elastic.reset_limit) + " allows");
    }
  }
}

// The round is over and the job goes on: the new world, the store emptied for it, the hosts that
// are no longer in it stopped, those that stay resized to their slots in it, every waiting
// worker's answer, and the new hosts opened.
void Job::Impl::HorovodElastic::resume() {
  if (rounds_->available_slots() < job_.opts_.elastic.min_np) {
    // Too few slots: wait for discovery to bring more, up to --elastic-timeout.
    if (waiting_for_slots_) return;
    waiting_for_slots_ = true;
    job_.diag_.raw(job_.diag_.program() +
                   ": elastic: " + std::to_string(rounds_->available_slots()) + " slots left, " +
                   std::to_string(job_.opts_.elastic.min_np) +
                   " needed (--min-np): waiting up to " +
                   std::to_string(job_.opts_.elastic.timeout_s) + " s for hosts\n");
    timer_.expires_after(std::chrono::seconds(job_.opts_.elastic.timeout_s));
    timer_.async_wait([this](std::error_code ec) {
      if (!ec && waiting_for_slots_)
        stop(round_failure_status_ ? round_failure_status_ : 1,
             "elastic: timed out waiting for " + std::to_string(job_.opts_.elastic.min_np) +
                 " slots (--elastic-timeout " + std::to_string(job_.opts_.elastic.timeout_s) + ")");
    });
    return;
  }
  waiting_for_slots_ = false;
  timer_.cancel();
  auto w = rounds_->assign();
  if (!w) return stop(1, "elastic: cannot go on: " + w.error().message);
  round_failure_status_ = 0;
  job_.rdv_->reset_store(*w);
  std::vector<std::string> hosts;
  for (const auto& a : *w)
    if (hosts.empty() || hosts.back() != a.host) hosts.push_back(a.host);
  job_.diag_.raw(job_.diag_.program() + ": elastic: reset " + std::to_string(rounds_->resets()) +
                 ": " + std::to_string(w->size()) +
                 (w->size() == 1 ? " worker on " : " workers on ") + std::to_string(hosts.size()) +
                 (hosts.size() == 1 ? " host\n" : " hosts\n"));
  for (size_t m : job_.attempt_.members) {
    HostLink& h = *job_.hosts_[m];
    if (h.done || h.closed || h.ranks_left <= 0) continue;
    if (std::find(hosts.begin(), hosts.end(), h.name()) != hosts.end()) {
      resize_host(m);
      label_workers(h);
      continue;
    }
    job_.diag_.verbose("elastic: stopping the workers of " + h.name());
    h.send_running(wire::encode(wire::Terminate{job_.kill_grace_ms()}));
  }
  // Workers of removed slots are stopped before they hear that they are out (rank -1).
  answer_queries();
  add_hosts();
}

void Job::Impl::HorovodElastic::label_workers(const HostLink& h) {
  for (const RankSlot& r : h.plan.ranks)
    if (auto a = rounds_->assignment({h.name(), r.local_rank}); a && a->rank >= 0)
      job_.out_.relabel(r.rank, a->rank);
}

void Job::Impl::HorovodElastic::answer_queries() {
  for (const auto& q : slot_queries_) {
    auto a = rounds_->assignment(q.slot);
    const std::string body = a ? a->response() : ElasticAssignment{}.response();
    HostLink& h = *job_.hosts_[q.host];
    if (h.link && !h.closed) h.link->send(wire::encode(wire::KvReply{q.id, 200, body}));
  }
  slot_queries_.clear();
}

// Every worker exited but the round never ended: a worker asked for its next rank (READY) and
// then exited, which the round does not count (horovod's registry ignores a report after
// READY unless it is a failure), while the round waited for slots or for other workers. The
// job ends as the round would have: 0 only when a worker of the round finished.
void Job::Impl::HorovodElastic::all_exited() {
  no_more_rounds();
  if (rounds_->succeeded()) return;
  const std::string waited =
      waiting_for_slots_
          ? "the job waited for " + std::to_string(job_.opts_.elastic.min_np) + " slots (--min-np)"
          : "a round waited for its workers";
  job_.diag_.error("elastic: every worker exited while " + waited + "; none finished");
  job_.attempt_.end.rank_aborted(round_failure_status_ ? round_failure_status_ : 1);
}

void Job::Impl::HorovodElastic::no_more_rounds() {
  stopping_ = true;
  timer_.cancel();
  discovery_timer_.cancel();
  slot_queries_.clear();
  // Hosts opened for rounds to come: none comes. A connection still under way is given up, or
  // the job's end would wait for it (up to its connect timeout, for a host that does not answer).
  if (standby_.empty()) return;
  for (const auto& [name, i] : standby_) job_.hosts_[i]->close();
  standby_.clear();
  ready_.clear();
  job_.launchers_.remote.cancel_all();
}

// No round follows: the workers still running are stopped; `status` != 0 is the job's failure.
void Job::Impl::HorovodElastic::stop(int status, const std::string& why) {
  if (stopping_) return;
  no_more_rounds();
  if (!why.empty()) job_.diag_.error(why);
  if (status != 0) job_.attempt_.end.rank_aborted(status);
  bool running = false;
  for (size_t m : job_.attempt_.members) {
    const HostLink& h = *job_.hosts_[m];
    running |= !h.done && !h.closed && h.ranks_left > 0;
  }
  if (running) return job_.abort_attempt(job_.kill_grace_ms());
  job_.check_attempt_over();
}

}  // namespace ferry
