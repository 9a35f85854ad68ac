// The job controller's elastic mode, second half: the hosts. The discovery script runs every
// second (on a thread: it may take its time); a change that would give another world is told to
// rank 0's notification service, as horovod's driver does, so that the workers reset at their
// next commit. A round that ends with hosts the job does not run on yet opens them (a fresh
// ferryd each) and starts their workers with their coordinates in the new world; on a host that
// stays, the world's new slots get workers (StartRanks) and the workers of its removed slots are
// stopped (StopRanks), while its other workers go on with their new ranks.
#include <algorithm>
#include <ctime>

#include "ferry/frontend/elastic_discovery.hpp"
#include "ferry/plan/environment.hpp"
#include "ferry/process/run_capture.hpp"
#include "ferry/rendezvous/framework_env.hpp"
#include "ferry/transport/connect_back.hpp"
#include "job_follow_up.hpp"
#include "worker_notifier.hpp"

namespace ferry {

void Job::Impl::HorovodElastic::discover_later() {
  if (stopping_ || job_.finished_) return;
  discovery_timer_.expires_after(std::chrono::seconds(1));
  discovery_timer_.async_wait([this](std::error_code ec) {
    if (!ec) discover();
  });
}

void Job::Impl::HorovodElastic::discover() {
  if (job_.opts_.elastic.fixed_hosts) {
    // horovod's FixedHosts: the same hosts every time (a host back from its cooldown is news).
    if (stopping_) return;
    listed_ = fixed_hosts_;
    apply_listing();
    return discover_later();
  }
  if (discovery_thread_.joinable()) discovery_thread_.join();
  discovery_thread_ =
      std::thread([this, script = job_.opts_.elastic.discovery_script, alive = job_.alive_] {
        auto out = run_shell_capture(script);
        asio::post(job_.io_, [this, out = std::move(out), alive]() mutable {
          if (*alive) discovered(std::move(out));
        });
      });
}

void Job::Impl::HorovodElastic::discovered(Result<std::string> out) {
  if (stopping_) return;
  Result<std::vector<DiscoveredHost>> hosts =
      out ? read_discovery_listing(*out, job_.opts_.elastic)
          : Result<std::vector<DiscoveredHost>>(out.error());
  if (!hosts) {
    // A transient failure: horovod logs it and tries again.
    if (hosts.error().message != discovery_error_)
      job_.diag_.warn("elastic: host discovery: " + hosts.error().message);
    discovery_error_ = hosts.error().message;
    return discover_later();
  }
  discovery_error_.clear();
  if (*hosts != listed_) {
    std::string list;
    for (const auto& h : *hosts)
      list += (list.empty() ? "" : ",") + h.name + ":" + std::to_string(h.slots);
    job_.diag_.verbose("elastic: discovered " + list);
    listed_ = std::move(*hosts);
  }
  apply_listing();
  discover_later();
}

// A host the job never ran on enters the rounds only once it can take workers at once: were it
// put in a world before, the workers already reset would wait for its workers in Horovod's
// rendezvous, and a host that then fails to open (no SSH, no ferryd, its sync) would hold them
// until gloo's timeout, which ends them and the job. Horovod's driver has the same window.
// The same goes for a host the job ran on whose ferryd is gone (its workers failed, it was lost,
// or it left the listing): back in the listing, or from its cooldown, it is opened again first.
void Job::Impl::HorovodElastic::apply_listing() {
  const double now = now_s();
  for (const auto& d : listed_) {
    if (!admitted_.contains(d.name) || link_open(d.name)) continue;
    if (rounds_->blacklisted(d.name) && !rounds_->cooldown_over(d.name, now)) continue;
    job_.diag_.verbose("elastic: " + d.name + " is back; opening it before a round counts it");
    admitted_.erase(d.name);
  }
  // New hosts are opened in the listing's order while the job's hosts, with those being opened,
  // hold fewer than --max-np slots (any number without it).
  std::vector<DiscoveredHost> usable;
  int slots = 0;
  for (const auto& d : listed_) {
    const bool in = admitted_.contains(d.name) || ready_.contains(d.name);
    if (in) usable.push_back(d);
    if ((in || standby_.contains(d.name)) && !rounds_->blacklisted(d.name)) slots += d.slots;
  }
  const int max_np = rounds_->limits().max_np;
  for (const auto& d : listed_) {
    if (admitted_.contains(d.name) || standby_.contains(d.name)) continue;
    if (max_np > 0 && slots >= max_np) break;
    if (prepare(d)) slots += d.slots;
  }
  // A prepared host the script no longer lists: its ferryd is closed.
  for (auto it = standby_.begin(); it != standby_.end();) {
    const bool listed = std::any_of(listed_.begin(), listed_.end(),
                                    [&](const DiscoveredHost& d) { return d.name == it->first; });
    if (listed) {
      ++it;
      continue;
    }
    job_.diag_.verbose("elastic: " + it->first + " is no longer listed; closing its ferryd");
    ready_.erase(it->first);
    const size_t i = it->second;
    it = standby_.erase(it);
    job_.hosts_[i]->close();
  }
  const int update = rounds_->update_hosts(usable, now);
  if (update != kNoUpdate && rounds_->would_reassign()) notify(update);
  if (waiting_for_slots_) resume();
}

bool Job::Impl::HorovodElastic::link_open(const std::string& name) const {
  return std::any_of(job_.hosts_.begin(), job_.hosts_.end(),
                     [&](const auto& h) { return h->name() == name && !h->closed; });
}

// A listed host the job never ran on: its ferryd, opened now (with no ranks), waits for a round.
bool Job::Impl::HorovodElastic::prepare(const DiscoveredHost& d) {
  if (auto f = open_failed_.find(d.name);
      f != open_failed_.end() && now_s() - f->second < kRetryOpenS)
    return false;
  HostPlan plan = discovered_plan(d.name);
  plan.host.slots = d.slots;
  standby_[d.name] = job_.hosts_.size();  // before it opens: a failure may come at once
  open_discovered(std::move(plan), "before it joins");
  return true;
}

// `PUT /worker_addresses/<host>:<local_rank>`: where that worker's notification service listens.
void Job::Impl::HorovodElastic::worker_address(const wire::KvRequest& q) {
  const std::string key = q.target.substr(std::string_view("/worker_addresses/").size());
  const size_t colon = key.rfind(':');
  if (colon == std::string::npos) return;
  auto a = parse_worker_addresses(q.body);
  if (!a) return job_.diag_.verbose("elastic: worker " + key + ": " + a.error().message);
  worker_addresses_[{key.substr(0, colon), std::atoi(key.c_str() + colon + 1)}] = std::move(*a);
}

// Rank 0 hears that hosts changed; its next state.commit() makes every worker reset.
void Job::Impl::HorovodElastic::notify(int update) {
  if (rounds_->world().empty()) return;
  const ElasticAssignment& coordinator = rounds_->world().front();
  auto it = worker_addresses_.find({coordinator.host, coordinator.local_rank});
  if (it == worker_addresses_.end())
    return job_.diag_.verbose("elastic: rank 0 has no notification service yet");
  const std::string body = hosts_updated_pickle(static_cast<uint32_t>(std::time(nullptr)), update);
  const std::string digest = hmac_sha256(it->second.key, body);
  if (digest.empty())
    return job_.diag_.warn("elastic: cannot sign the notice to rank 0: libcrypto is not available");
  job_.diag_.verbose("elastic: telling rank 0 (" + coordinator.host + ") that hosts changed");
  send_service_message(job_.io_, it->second.addresses, service_message(digest, body),
                       [this, alive = job_.alive_](const std::string& why) {
                         if (*alive && !why.empty())
                           job_.diag_.warn("elastic: notifying rank 0: " + why);
                       });
}

// The world's slots on host `name` as new ranks of the job, in `plan`.
void Job::Impl::HorovodElastic::place_workers(const std::string& name, HostPlan& plan) {
  plan.ranks.clear();
  plan.node_rank = static_cast<int>(job_.attempt_.placement.hosts.size());
  for (const auto& a : rounds_->world()) {
    if (a.host != name) continue;
    RankSlot r{static_cast<int>(job_.attempt_.rank_pid.size()),
               a.local_rank,
               a.local_size,
               a.cross_rank,
               a.cross_size,
               plan.node_rank};
    job_.attempt_.rank_pid.push_back(0);
    job_.attempt_.rank_failure.emplace_back();
    job_.attempt_.rank_exited.push_back(false);
    plan.ranks.push_back(r);
  }
  plan.host.slots = static_cast<int>(plan.ranks.size());
  job_.attempt_.placement.world_size = static_cast<int>(job_.attempt_.rank_pid.size());
}

// After a round: every host of the new world that runs no workers of the job gets them: a host
// prepared for it (apply_listing()) at once (admit()); one that is neither prepared nor running
// (its ferryd ended after the listing was applied) a fresh ferryd, with the world's slots on it.
// A host that runs workers is resize_host()'s.
void Job::Impl::HorovodElastic::add_hosts() {
  std::vector<std::string> names;
  for (const auto& a : rounds_->world())
    if (names.empty() || names.back() != a.host) names.push_back(a.host);
  for (const auto& name : names) {
    if (auto s = standby_.find(name); s != standby_.end()) {
      if (ready_.contains(name)) admit(s->second);
      continue;
    }
    if (link_open(name)) continue;
    admitted_.insert(name);
    HostPlan plan = discovered_plan(name);
    place_workers(name, plan);
    const std::string why = "for " + std::to_string(plan.ranks.size()) + " new worker(s)";
    open_discovered(std::move(plan), why);
  }
}

HostPlan Job::Impl::HorovodElastic::discovered_plan(const std::string& name) const {
  HostPlan plan;
  plan.label = name;
  // A host the job ran on keeps its own entry (a hostfile's port or user for it).
  for (const auto& p : job_.full_.hosts) {
    if (p.label != name) continue;
    plan.host = p.host;
    return plan;
  }
  plan.host = job_.full_.hosts.front().host;  // the command line's SSH settings
  plan.host.name = name;
  plan.host.origin = "host discovery";
  return plan;
}

// A ferryd on a host of the discovery script, opened with `plan`: the job's next host.
size_t Job::Impl::HorovodElastic::open_discovered(HostPlan plan, const std::string& why) {
  const size_t i = job_.hosts_.size();
  job_.full_.hosts.push_back(plan);
  HostReach reach = decide_host_reach(plan.host, {job_.opts_.ssh_port, job_.opts_.ssh_user});
  HostEvents& events = job_;
  job_.hosts_.push_back(
      std::make_unique<HostLink>(i, std::move(plan), std::move(reach), events, job_.out_));
  HostLink& h = *job_.hosts_.back();
  h.tail = job_.tail_for_links();
  if (job_.watch_) job_.watch_->host(i, h.name());
  job_.diag_.verbose("elastic: opening " + h.name() + " " + why);
  job_.open_host(i);
  return i;
}

void Job::Impl::HorovodElastic::admit(size_t i) {
  HostLink& h = *job_.hosts_[i];
  standby_.erase(h.name());
  ready_.erase(h.name());
  admitted_.insert(h.name());
  place_workers(h.name(), h.plan);
  job_.full_.hosts[i] = h.plan;
  job_.diag_.verbose("elastic: " + h.name() + " joins with " + std::to_string(h.plan.ranks.size()) +
                     " new worker(s)");
  join(i);
}

// A host opened for new workers said Hello (or a prepared one is admitted): it joins the running
// attempt with its workers' coordinates in the current world.
void Job::Impl::HorovodElastic::join(size_t i) {
  // --sync: the tree first, as every host of the first world had it before its workers started.
  if (job_.sync_before_join(i)) return;
  HostLink& h = *job_.hosts_[i];
  const int j = static_cast<int>(job_.attempt_.placement.hosts.size());
  job_.attempt_.placement.hosts.push_back(h.plan);
  job_.attempt_.members.push_back(i);
  h.begin_attempt(h.plan, j);
  job_.choose_network();
  const SharedSpec shared = job_.shared_spec();
  HostInputs in{&h.plan, h.local,
                job_.rdv_->host_environment(j, h.hello_msg.kv_port, job_.opts_.exports),
                static_cast<uint32_t>(j)};
  wire::HostSpec spec = make_host_spec(job_.opts_, job_.attempt_.placement, in, shared);
  for (auto& rl : spec.ranks)
    if (const RankSlot* slot = h.slot(rl.rank)) rl = launch_entry(h, *slot);
  label_workers(h);
  h.link->send(wire::encode(spec));
  h.spec_sent = true;
}

// A worker's launch entry: its rank's variables with the coordinates of its slot in the current
// world (HOROVOD_RANK, ...), as horovod's driver starts a worker.
wire::RankLaunch Job::Impl::HorovodElastic::launch_entry(const HostLink& h,
                                                         const RankSlot& r) const {
  // Horovod workers: no MASTER_ADDR to put in {master_addr} (it expands empty).
  wire::RankLaunch rl = rank_launch(job_.opts_, job_.attempt_.placement, h.plan, r, {});
  auto a = rounds_->assignment({h.name(), r.local_rank});
  if (!a) return rl;
  const std::pair<const char*, int> vars[] = {{"HOROVOD_RANK=", a->rank},
                                              {"HOROVOD_LOCAL_RANK=", a->local_rank},
                                              {"HOROVOD_LOCAL_SIZE=", a->local_size},
                                              {"HOROVOD_CROSS_RANK=", a->cross_rank},
                                              {"HOROVOD_CROSS_SIZE=", a->cross_size}};
  for (auto& e : rl.env)
    for (const auto& [prefix, v] : vars)
      if (e.starts_with(prefix)) e = prefix + std::to_string(v);
  rl.env.push_back("HOROVOD_SIZE=" + std::to_string(a->size));
  return rl;
}

// After a round, a host of the new world that already runs workers (host `m` of the attempt):
// workers whose slot is gone are stopped on purpose (their exits are not failures), and the
// world's slots that have no worker there get one, as new ranks of the job.
void Job::Impl::HorovodElastic::resize_host(size_t m) {
  HostLink& h = *job_.hosts_[m];
  std::vector<int> kept, gone;  // local ranks with a worker; ranks to stop
  for (const auto& r : h.plan.ranks) {
    if (job_.attempt_.rank_exited[r.rank] || stopped_.contains(r.rank)) continue;
    if (rounds_->assignment({h.name(), r.local_rank}))
      kept.push_back(r.local_rank);
    else
      gone.push_back(r.rank);
  }
  if (!gone.empty()) {
    for (int rank : gone) {
      stopped_.insert(rank);
      job_.diag_.verbose("elastic: stopping rank " + std::to_string(rank) + " on " + h.name() +
                         " (local rank " + std::to_string(h.slot(rank)->local_rank) +
                         "): its slot left the world");
    }
    h.send_running(wire::encode(wire::StopRanks{{gone.begin(), gone.end()}, job_.kill_grace_ms()}));
  }
  wire::StartRanks start;
  for (const auto& a : rounds_->world()) {
    if (a.host != h.name() || std::find(kept.begin(), kept.end(), a.local_rank) != kept.end())
      continue;
    const RankSlot r{static_cast<int>(job_.attempt_.rank_pid.size()),
                     a.local_rank,
                     a.local_size,
                     a.cross_rank,
                     a.cross_size,
                     h.plan.node_rank};
    job_.attempt_.rank_pid.push_back(0);
    job_.attempt_.rank_failure.emplace_back();
    job_.attempt_.rank_exited.push_back(false);
    job_.attempt_.placement.world_size = static_cast<int>(job_.attempt_.rank_pid.size());
    h.plan.ranks.push_back(r);  // the largest rank yet: the plan stays in rank order
    job_.attempt_.placement.hosts[static_cast<size_t>(h.attempt_index)].ranks.push_back(r);
    if (m < job_.full_.hosts.size()) job_.full_.hosts[m].ranks.push_back(r);
    ++h.ranks_left;
    start.ranks.push_back(launch_entry(h, r));
  }
  if (start.ranks.empty()) return;
  job_.diag_.verbose("elastic: starting " + std::to_string(start.ranks.size()) +
                     " new worker(s) on " + h.name());
  h.send_running(wire::encode(start));
}

}  // namespace ferry
