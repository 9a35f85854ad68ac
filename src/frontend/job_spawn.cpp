// The job controller, MPI_Comm_spawn: a rank asks (through its ferryd's PMIx server, or its
// PMI-1 server for MPICH) for new processes. They go to the free slots of the attempt's hosts
// (place_spawned), are numbered after the world's ranks, and every host is told their
// namespace (each registers it) and starts its own. From then on they are the job's processes like
// its ranks: their output is tagged [spawnN:R], their exits and failures count, and whatever ends
// the job ends them.

#include <algorithm>
#include <cstdlib>

#include "ferry/dynproc/spawn_placement.hpp"
#include "ferry/rendezvous/pmi_job.hpp"
#include "ferry/rendezvous/pmix_job.hpp"
#include "job_impl.hpp"

namespace ferry {

namespace {

// The processes running on `h`: its ranks and spawned processes that have not exited.
int running_on(const HostLink& h, const std::vector<bool>& exited) {
  return static_cast<int>(
      std::count_if(h.plan.ranks.begin(), h.plan.ranks.end(), [&](const RankSlot& r) {
        return r.rank >= 0 && static_cast<size_t>(r.rank) < exited.size() && !exited[r.rank];
      }));
}

// The refusal of a spawn whose MPI_Info names hosts.
std::string host_key_refusal(const std::string& key) {
  return "the info key '" + key +
         "' is not supported: spawned processes go to the job's free slots in order (leave "
         "the key out)";
}

}  // namespace

// Where `total` processes may go now, or why not (one clause for the user).
Result<std::vector<int>> Job::Impl::spawn_slots(uint64_t total) const {
  std::vector<int> free;
  for (size_t k : attempt_.members) {
    const HostLink& h = *hosts_[k];
    free.push_back(h.plan.host.slots - running_on(h, attempt_.rank_exited));
  }
  auto where_to = place_spawned(free, static_cast<int>(total), opts_.oversubscribe);
  if (where_to) return where_to;
  // Hosts of the host list that run no rank are not reached at all: say so, rather than
  // leave the user wondering where their slots went.
  std::string idle;
  for (const auto& e : opts_.hosts) {
    const bool used = std::any_of(attempt_.members.begin(), attempt_.members.end(), [&](size_t k) {
      return hosts_[k]->plan.host.name == e.name && hosts_[k]->plan.host.port == e.port;
    });
    if (!used) idle += (idle.empty() ? "" : ", ") + e.name;
  }
  if (idle.empty()) return where_to;
  return make_error(where_to.error().message + "; " + idle +
                    " run(s) no rank, and spawned processes start only on hosts that run ranks "
                    "(-np or --map-by node puts one there)");
}

// Spawned process `child` of spawn `spawn`, of `app`, on member `j`: numbered after every
// process so far, counted on its host, named for the console and the failure report.
wire::RankLaunch Job::Impl::add_spawned(int spawn, int child, size_t j, uint32_t app,
                                        const wire::PmixSpawnApp& a, const std::string& nspace) {
  HostLink& h = *hosts_[attempt_.members[j]];
  const int id = static_cast<int>(attempt_.rank_pid.size());
  attempt_.rank_pid.push_back(0);
  attempt_.rank_failure.emplace_back();
  attempt_.rank_exited.push_back(false);
  h.plan.ranks.push_back(RankSlot{id, static_cast<int>(h.plan.ranks.size()), 0, 0, 0,
                                  h.plan.node_rank, static_cast<int>(app)});
  ++h.ranks_left;
  attempt_.spawned[id] = "spawned process " + std::to_string(spawn) + ":" + std::to_string(child);
  out_.name_spawned(id, spawn, child, h.name());
  summary_.spawned(id, h.plan.label, "spawn" + std::to_string(spawn) + ":" + std::to_string(child));
  wire::RankLaunch rl;
  rl.rank = id;
  rl.argv = a.argv;
  rl.env = a.env;
  rl.wdir = a.cwd;
  rl.app = app;
  rl.pmix_nspace = nspace;
  rl.pmix_rank = child;
  return rl;
}

// `apps` placed on the attempt's free slots as the next spawn, named `prefix`.spawnN: every
// process numbered and named (add_spawned). An Error (one clause) when they do not fit.
Result<Job::Impl::SpawnPlan> Job::Impl::plan_spawn(const std::vector<wire::PmixSpawnApp>& apps,
                                                   const std::string& prefix) {
  uint64_t total = 0;
  for (const auto& a : apps) total += a.maxprocs;
  auto where_to = spawn_slots(total);
  if (!where_to) return where_to.error();
  SpawnPlan plan;
  plan.spawn = ++attempt_.spawns;
  plan.name = prefix + ".spawn" + std::to_string(plan.spawn);
  plan.per_host.resize(attempt_.members.size());
  std::vector<std::string> names;
  int child = 0;
  for (size_t a = 0; a < apps.size(); ++a) {
    plan.app_sizes.push_back(apps[a].maxprocs);
    for (uint32_t k = 0; k < apps[a].maxprocs; ++k, ++child) {
      const auto j = static_cast<size_t>((*where_to)[static_cast<size_t>(child)]);
      plan.per_host[j].push_back(
          add_spawned(plan.spawn, child, j, static_cast<uint32_t>(a), apps[a], plan.name));
      plan.node_of_rank.push_back(static_cast<uint32_t>(j));
      const std::string& name = hosts_[attempt_.members[j]]->name();
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
  }
  for (const auto& n : names) plan.on += (plan.on.empty() ? "" : ", ") + n;
  return plan;
}

// "rank 3", or "spawned process 1:0" for a process an earlier spawn started.
std::string Job::Impl::spawner_name(int process, const std::string& host) const {
  auto it = attempt_.spawned.find(process);
  return (it != attempt_.spawned.end() ? it->second : "rank " + std::to_string(process)) + " on " +
         host;
}

void Job::Impl::on_pmix_spawn(size_t i, const wire::PmixSpawn& m) {
  if (!rdv_ || !in_attempt(i)) return on_broken(i, "PMIx spawn outside a running job");
  HostLink& asker = *hosts_[i];
  const std::string parent =
      m.parent.nspace == rdv_->nspace()
          ? "rank " + std::to_string(m.parent.rank)
          : "spawned process " + m.parent.nspace + ":" + std::to_string(m.parent.rank);
  const std::string who = "MPI_Comm_spawn by " + parent + " on " + asker.name();
  auto refuse = [&](int32_t status, const std::string& why) {
    diag_.error(who + ": " + why);
    asker.send_running(wire::encode(wire::PmixSpawnDone{m.id, status, {}}));
  };
  uint64_t total = 0;
  for (const auto& a : m.apps) total += a.maxprocs;
  if (total == 0 || total > 65536)
    return refuse(kPmixErrBadParam, "asks for " + std::to_string(total) + " processes");
  if (!m.host_keys.empty())
    return refuse(kPmixErrNotSupported, host_key_refusal(m.host_keys.front()));
  auto plan = plan_spawn(m.apps, rdv_->nspace());
  if (!plan) return refuse(kPmixErrOutOfResource, plan.error().message);

  wire::PmixSpawnJob job{plan->name, plan->node_of_rank, plan->app_sizes, {}};
  rdv_->add_namespace(plan->name, job.node_of_rank);
  // Every host registers the namespace (its ranks may connect to the new processes) before
  // the parent hears of it: each link delivers in order.
  for (size_t j = 0; j < attempt_.members.size(); ++j) {
    job.ranks = std::move(plan->per_host[j]);
    hosts_[attempt_.members[j]]->send_running(wire::encode(job));
  }
  diag_.verbose(who + ": " + std::to_string(total) + " process(es) as spawn " +
                std::to_string(plan->spawn) + " (PMIx namespace " + plan->name + ") on " +
                plan->on);
  asker.send_running(wire::encode(wire::PmixSpawnDone{m.id, kPmixSuccess, plan->name}));
}

// MPICH's MPI_Comm_spawn (PMI-1's PMI_Spawn_multiple): the processes are placed as Open
// MPI's are and form a process group of their own (its KVS seeded with the parent's preput
// pairs, its barriers among its hosts alone), told to the hosts that run some of them
// before the spawner hears it succeeded.
void Job::Impl::on_pmi_spawn(size_t i, const wire::PmiSpawn& m) {
  if (!rdv_ || !in_attempt(i)) return on_broken(i, "PMI spawn outside a running job");
  HostLink& asker = *hosts_[i];
  const std::string who = "MPI_Comm_spawn by " + spawner_name(m.rank, asker.name());
  auto refuse = [&](const std::string& why) {
    diag_.error(who + ": " + why);
    asker.send_running(wire::encode(wire::PmiSpawnDone{m.rank, {}, why}));
  };
  uint64_t total = 0;
  for (const auto& a : m.apps) total += a.maxprocs;
  if (total == 0 || total > 65536)
    return refuse("asks for " + std::to_string(total) + " processes");
  // The MPI_Info keys hydra serves: wdir, path (put before PATH, as hydra does); the
  // placement keys would be quietly wrong here, so they are refused; others are left.
  std::vector<wire::PmixSpawnApp> apps = m.apps;
  std::string ignored;
  for (size_t k = 0; k < m.info_keys.size(); ++k) {
    wire::PmixSpawnApp& a = apps[m.info_apps[k]];
    const std::string& key = m.info_keys[k];
    const std::string& value = m.info_values[k];
    if (key == "wdir") {
      a.cwd = value;
    } else if (key == "path") {
      const char* path = ::getenv("PATH");
      a.env.push_back("PATH=" + value + (path && *path ? ":" + std::string(path) : ""));
    } else if (key == "host" || key == "hosts" || key == "hostfile") {
      return refuse(host_key_refusal(key));
    } else {
      ignored += (ignored.empty() ? "" : ", ") + key;
    }
  }
  auto plan = plan_spawn(apps, job_id_.empty() ? "ferry" : job_id_);
  if (!plan) return refuse(plan.error().message);

  wire::PmiSpawnJob job;
  job.kvsname = plan->name;
  job.size = static_cast<int32_t>(total);
  job.process_mapping =
      pmi_process_mapping(std::vector<int>(plan->node_of_rank.begin(), plan->node_of_rank.end()));
  job.preput_keys = m.preput_keys;
  job.preput_values = m.preput_values;
  std::vector<int> group_hosts;
  for (size_t j = 0; j < plan->per_host.size(); ++j)
    if (!plan->per_host[j].empty()) group_hosts.push_back(static_cast<int>(j));
  if (auto st = rdv_->add_pmi_group(plan->name, group_hosts); !st)
    return on_broken(i, st.error().message);
  for (int j : group_hosts) {
    job.ranks = std::move(plan->per_host[static_cast<size_t>(j)]);
    hosts_[attempt_.members[static_cast<size_t>(j)]]->send_running(wire::encode(job));
  }
  diag_.verbose(who + ": " + std::to_string(total) + " process(es) as spawn " +
                std::to_string(plan->spawn) + " (PMI process group " + plan->name + ") on " +
                plan->on + (ignored.empty() ? "" : "; info keys left alone: " + ignored));
  asker.send_running(wire::encode(wire::PmiSpawnDone{m.rank, plan->name, {}}));
}

}  // namespace ferry
