// The job controller, second half: the attempts. What every host of an attempt is sent, an
// attempt's end (what follows is the FollowUp's: job_follow_up.hpp), and the hosts opened again
// before a restart.
#include <cstdlib>

#include "ferry/binding/slot_list.hpp"
#include "ferry/plan/environment.hpp"
#include "ferry/rendezvous/pmi_job.hpp"
#include "ferry/rendezvous/pmix_job.hpp"
#include "job_follow_up.hpp"

namespace ferry {

// The hosts that are left keep their number of ranks; the ranks are numbered again,
// contiguously, in the job's order.
Result<Placement> Job::Impl::place_on(const std::vector<size_t>& members) const {
  if (members.size() == full_.hosts.size()) return full_;
  HostList hosts;
  for (size_t m : members) {
    HostEntry e = full_.hosts[m].host;
    e.slots = static_cast<int>(full_.hosts[m].ranks.size());
    e.max_slots = 0;
    hosts.push_back(std::move(e));
  }
  PlacementPolicy policy;
  policy.order = opts_.placement.order;
  if (policy.order == RankOrder::kFollowMapping && opts_.placement.mapping == HostMapping::kByNode)
    policy.order = RankOrder::kByNode;
  auto placed = place_ranks(hosts, 0, false, policy);
  if (placed)
    for (size_t j = 0; j < members.size(); ++j)
      placed->hosts[j].label = full_.hosts[members[j]].label;
  return placed;
}

std::string Job::Impl::world_text(const Attempt& a) {
  const size_t n = a.members.size();
  const int w = a.placement.world_size;
  return std::to_string(n) + (n == 1 ? " host, " : " hosts, ") + std::to_string(w) +
         (w == 1 ? " rank" : " ranks");
}

void Job::Impl::launch_attempt(std::vector<size_t> members, const std::string& how) {
  auto placed = place_on(members);
  if (!placed) {
    diag_.error("cannot place the next attempt: " + placed.error().message);
    return finish_job();
  }
  const bool first = phase_ == Phase::kStarting;
  Attempt next;
  next.number = first ? 0 : attempt_.number + 1;
  next.placement = std::move(placed.value());
  next.members = std::move(members);
  next.rank_pid.assign(next.placement.world_size, 0);
  next.rank_failure.assign(next.placement.world_size, {});
  next.rank_exited.assign(next.placement.world_size, false);
  attempt_ = std::move(next);
  if (watch_ && !first) {
    watch_->mark(how.starts_with("restarting") ? "restart" : "new attempt",
                 "attempt " + std::to_string(attempt_.number) + (how.empty() ? "" : ": " + how));
    watch_->new_attempt();
  }
  std::vector<std::string> rank_hosts(attempt_.placement.world_size);
  for (const HostPlan& hp : attempt_.placement.hosts)
    for (const RankSlot& r : hp.ranks)
      if (r.rank >= 0 && r.rank < attempt_.placement.world_size) rank_hosts[r.rank] = hp.label;
  summary_.begin(rank_hosts);
  for (auto& h : hosts_) {
    h->attempt_index = -1;
    h->spec_sent = false;
  }
  for (size_t j = 0; j < attempt_.members.size(); ++j)
    hosts_[attempt_.members[j]]->begin_attempt(attempt_.placement.hosts[j], static_cast<int>(j));
  if (!first) {
    out_.begin_attempt(attempt_.number);
    diag_.raw(diag_.program() + ": " + how + " on " + world_text(attempt_) + "\n");
  }
  phase_ = Phase::kRunning;
  rdv_ = std::make_unique<RendezvousService>(
      attempt_.placement, pmix_nspace_name(job_id_, static_cast<uint32_t>(attempt_.number)),
      [this](const std::string& frame) {
        for (size_t m : attempt_.members) hosts_[m]->send_running(frame);
      },
      [this](int j, const std::string& frame) {
        if (j >= 0 && static_cast<size_t>(j) < attempt_.members.size())
          hosts_[attempt_.members[j]]->send_running(frame);
      });
  if (auto s = rdv_->init(); !s) diag_.warn(s.error().message);
  if (first) follow_up_->begin();
  choose_network();
  start_gated(first);
}

// Before an attempt's ranks start, two things may be under way at once: its hosts' copies of
// the tree (--sync) and, before the first attempt, the data network's preflight. They need
// nothing of each other (a ferryd answers the preflight once its copy is in place), so both
// go at once, and the HostSpecs go once both are done: a host that keeps the tree costs the
// launch the longer of the two round trips, not their sum.
void Job::Impl::start_gated(bool first) {
  gate_ = {want_sync(), first && want_preflight(), true};
  if (gate_.sync) start_sync();
  if (phase_ == Phase::kFinishing) return;  // a sync that failed while the hosts were reached
  if (gate_.preflight) start_preflight();
  pass_gate();
}

void Job::Impl::sync_done() {
  gate_.sync = false;
  pass_gate();
}

void Job::Impl::preflight_done() {
  gate_.preflight = false;
  pass_gate();
}

void Job::Impl::pass_gate() {
  if (!gate_.armed || gate_.sync || gate_.preflight || phase_ == Phase::kFinishing) return;
  gate_.armed = false;
  send_specs();
}

// Every member's part of the attempt: from here on its ranks start.
void Job::Impl::send_specs() {
  if (opts_.check) return start_check();  // --check: no rank starts
  const bool first = attempt_.number == 0;
  if (std::string misfit = rank_file_misfit(); !misfit.empty()) {
    diag_.error(misfit);
    attempt_.end.refused();
    return finish_job();
  }
  auto specs = encode_host_specs();
  if (!specs) {
    diag_.error(specs.error().message);
    attempt_.end.start_failed();
    return finish_job();
  }
  for (size_t j = 0; j < attempt_.members.size(); ++j) {
    HostLink& h = *hosts_[attempt_.members[j]];
    h.link->send(std::move((*specs)[j]));
    h.spec_sent = true;
  }
  if (first && stdin_host_ >= 0) start_stdin(static_cast<size_t>(stdin_host_));
  if (first && opts_.heartbeat_s > 0) heartbeat();
}

std::string Job::Impl::rank_file_misfit() const {
  if (!opts_.rank_file) return "";
  for (size_t m : attempt_.members) {
    const HostLink& h = *hosts_[m];
    // No topology there: ferryd runs its ranks unbound, with a warning.
    if (h.hello_msg.socket_cores.empty()) continue;
    const std::vector<int> sockets(h.hello_msg.socket_cores.begin(),
                                   h.hello_msg.socket_cores.end());
    for (const RankSlot& r : h.plan.ranks) {
      const RankFileEntry* e = opts_.rank_file->find(r.rank);
      if (!e || e->slots.empty()) continue;
      if (auto cores = slot_list_cores(e->slots, sockets); !cores)
        return opts_.rank_file->where(r.rank) + ": rank " + std::to_string(r.rank) +
               " slot=" + e->slots + " on " + h.plan.label + ": " + cores.error().message;
    }
  }
  return "";
}

Result<std::vector<std::string>> Job::Impl::encode_host_specs() {
  const SharedSpec shared = shared_spec();
  std::vector<std::string> frames;
  for (size_t j = 0; j < attempt_.members.size(); ++j) {
    HostLink& h = *hosts_[attempt_.members[j]];
    HostInputs in{&h.plan, h.local, rdv_->host_environment(j, h.hello_msg.kv_port, opts_.exports),
                  static_cast<uint32_t>(j)};
    // Every host's spec is made before the first is sent: one that cannot be sent stops
    // the job before any rank starts.
    try {
      frames.push_back(wire::encode(make_host_spec(opts_, attempt_.placement, in, shared)));
    } catch (const wire::FrameTooLarge& e) {
      return make_error("host " + h.plan.label + " (" + std::to_string(h.plan.ranks.size()) +
                        " ranks): its job description is too large: " + e.what());
    }
  }
  return frames;
}

// MASTER_ADDR and MASTER_PORT of the attempt: rank 0's host's address on the chosen network, and
// a port its ferryd found free just now (each attempt's store gets a fresh one).
std::pair<std::string, uint16_t> Job::Impl::master_endpoint() const {
  const HostLink& first = *hosts_[attempt_.members.front()];
  return {master_address(rdv_->choice(), rank0_address(first, hosts_)),
          first.free_port ? first.free_port : uint16_t{29500}};
}

SharedSpec Job::Impl::shared_spec() {
  JobEnvironment je;
  std::tie(je.master_addr, je.master_port) = master_endpoint();
  je.exported = opts_.exports;
  diag_.verbose("MASTER_ADDR=" + je.master_addr + " MASTER_PORT=" + std::to_string(je.master_port));
  SharedSpec s{job_id_, job_environment(attempt_.placement, je), rdv_->secret(),
               pmi_host_config(attempt_.placement, 0, job_id_).process_mapping};
  if (follow_up_->restartable()) {
    ElasticEnvironment el{follow_up_->restarts(), opts_.max_restarts, job_id_};
    auto vars = elastic_environment(el, opts_.exports,
                                    [](const char* n) -> const char* { return std::getenv(n); });
    s.env.insert(s.env.end(), vars.begin(), vars.end());
    // Every attempt, shrinks included (TORCHELASTIC_RESTART_COUNT counts restarts only).
    s.env.emplace_back("FERRY_ATTEMPT=" + std::to_string(attempt_.number));
  }
  if (opts_.elastic.on()) s.env.emplace_back("HOROVOD_ELASTIC=1");
  // PMIx for Open MPI ranks (not in horovodrun's elastic mode, whose world changes): the
  // names the ferryds gave, and each rank's host.
  if (!opts_.elastic.on()) {
    for (size_t m : attempt_.members) s.node_names.push_back(hosts_[m]->hello_msg.hostname);
    s.node_of_rank.assign(static_cast<size_t>(attempt_.placement.world_size), 0);
    for (size_t j = 0; j < attempt_.placement.hosts.size(); ++j)
      for (const auto& r : attempt_.placement.hosts[j].ranks)
        if (r.rank >= 0 && r.rank < attempt_.placement.world_size)
          s.node_of_rank[r.rank] = static_cast<uint32_t>(j);
  }
  s.attempt = static_cast<uint32_t>(attempt_.number);
  s.restartable = follow_up_->restartable();
  return s;
}

// libpmix takes milliseconds to start (its components, its files): each ferryd starts its PMIx
// server while the other hosts still connect, rather than at its HostSpec, as soon as its PMIx
// name is known. That name is its hostname made unique in host order (the HostSpec's node_names
// give the same), so it is known once every host before it said Hello.
void Job::Impl::start_pmix_early() {
  if (opts_.no_pmi || opts_.elastic.on() || opts_.check || phase_ != Phase::kStarting) return;
  std::vector<std::string> hostnames;
  for (const auto& h : hosts_) {
    if (!h->hello) break;  // the names after it wait for its
    hostnames.push_back(h->hello_msg.hostname);
  }
  const std::vector<std::string> names = pmix_node_names(std::move(hostnames));
  for (size_t i = 0; i < names.size(); ++i) {
    HostLink& h = *hosts_[i];
    if (h.pmix_start_sent || h.plan.ranks.empty() || !h.link || h.closed) continue;
    h.pmix_start_sent = true;
    h.link->send(wire::encode(wire::PmixStart{names[i]}));
  }
}

// The frameworks' interface on every host of the attempt (NCCL_SOCKET_IFNAME, ...), from what each
// ferryd reported and the address ferryrun reached it at.
void Job::Impl::choose_network() {
  const std::string this_machine = this_machine_address(hosts_);
  std::vector<HostNetwork> nets;
  for (size_t m : attempt_.members) {
    std::string problem;
    nets.push_back(hosts_[m]->network(this_machine, problem));
    if (!problem.empty()) diag_.verbose(hosts_[m]->name() + ": " + problem);
  }
  const NicChoice& c = rdv_->choose(nets, opts_.network_interfaces, opts_.network_exclude);
  for (const auto& line : c.explanation) diag_.verbose(line);
  if (!c.warning.empty()) diag_.warn(c.warning);
}

// The attempt is over once every host of it said Done or was lost.
void Job::Impl::check_attempt_over() {
  if (phase_ != Phase::kRunning || attempt_.over) return maybe_finish();
  for (size_t m : attempt_.members)
    if (!hosts_[m]->done && !hosts_[m]->closed) return;
  follow_up_->attempt_done();
  attempt_.over = true;
  end_attempt();
}

void Job::Impl::end_attempt() {
  abort_timer_.cancel();
  out_.flush();
  if (rdv_ && rdv_->pmix_fences() + rdv_->pmix_requests() + rdv_->pmix_groups() > 0)
    diag_.verbose("PMIx: " + std::to_string(rdv_->pmix_fences()) + " fence(s) across hosts, " +
                  std::to_string(rdv_->pmix_requests()) + " rank data request(s) forwarded, " +
                  std::to_string(rdv_->pmix_groups()) + " connect, disconnect or partial fence(s)");
  follow_up_->after_attempt();
}

std::vector<size_t> Job::Impl::survivors(std::string& lost_names) const {
  std::vector<size_t> left;
  for (size_t m : attempt_.members) {
    if (hosts_[m]->lost)
      lost_names += (lost_names.empty() ? "" : ", ") + hosts_[m]->name();
    else
      left.push_back(m);
  }
  return left;
}

// Before a restart, every host whose connection ended is opened again: it rejoins if its ferryd
// answers within --start-timeout.
void Job::Impl::reopen_lost_hosts() {
  bool any = false;
  for (size_t i = 0; i < hosts_.size(); ++i) {
    if (!hosts_[i]->closed) continue;  // still connected: its ferryd serves the next attempt
    HostReach reach = decide_host_reach(full_.hosts[i].host, {opts_.ssh_port, opts_.ssh_user});
    hosts_[i]->retire();
    retired_.push_back(std::move(hosts_[i]));
    HostEvents& events = *this;
    hosts_[i] = std::make_unique<HostLink>(i, full_.hosts[i], std::move(reach), events, out_);
    hosts_[i]->tail = tail_for_links();
    diag_.verbose("host " + hosts_[i]->name() + ": opening it again");
    open_host(i);
    any = true;
  }
  if (any) {
    start_timer_.expires_after(std::chrono::seconds(opts_.start_timeout_s));
    start_timer_.async_wait([this](std::error_code ec) {
      if (!ec && phase_ == Phase::kBetween) start_timed_out();
    });
  }
  check_reopened();
}

// Once every host opened again answered or failed: the restart runs on the hosts that are there,
// if there are enough.
void Job::Impl::check_reopened() {
  if (phase_ != Phase::kBetween) return maybe_finish();
  for (auto& h : hosts_)
    if (h->opening || (!h->hello && !h->closed)) return;  // still waiting for this one
  start_timer_.cancel();
  std::vector<size_t> members;
  int ranks = 0;
  for (size_t i = 0; i < hosts_.size(); ++i) {
    const HostLink& h = *hosts_[i];
    if (h.hello && !h.closed) {
      members.push_back(i);
      ranks += static_cast<int>(full_.hosts[i].ranks.size());
    } else if (!h.start_error.empty()) {
      diag_.warn(h.start_error);
    }
  }
  if (!follow_up_->may_restart(static_cast<int>(members.size()), ranks,
                               static_cast<int>(hosts_.size()))) {
    diag_.error("not restarting: " + std::to_string(members.size()) + " of " +
                std::to_string(hosts_.size()) + " hosts answered, too few to run the job");
    return finish_job();
  }
  launch_attempt(std::move(members), follow_up_->restart_text());
}

// No attempt follows: every link closes, which ends every ferryd.
void Job::Impl::finish_job() {
  phase_ = Phase::kFinishing;
  start_timer_.cancel();
  for (auto& h : hosts_) h->close();
  maybe_finish();
}

}  // namespace ferry
