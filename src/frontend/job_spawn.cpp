// The job controller, MPI_Comm_spawn: a rank asks (through its ferryd's PMIx server) for new
// processes. They go to the free slots of the attempt's hosts (place_spawned), are numbered
// after the world's ranks, and every host is told their namespace (each registers it) and
// starts its own. From then on they are the job's processes like its ranks: their output is
// tagged [spawnN:R], their exits and failures count, and whatever ends the job ends them.

#include <algorithm>

#include "ferry/dynproc/spawn_placement.hpp"
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
  auto where_to = spawn_slots(total);
  if (!where_to) return refuse(kPmixErrOutOfResource, where_to.error().message);

  const int spawn = ++attempt_.spawns;
  const std::string nspace = rdv_->nspace() + ".spawn" + std::to_string(spawn);
  wire::PmixSpawnJob job{nspace, {}, {}, {}};
  std::vector<std::vector<wire::RankLaunch>> per_host(attempt_.members.size());
  std::vector<std::string> names;
  int child = 0;
  for (size_t a = 0; a < m.apps.size(); ++a) {
    job.app_sizes.push_back(m.apps[a].maxprocs);
    for (uint32_t k = 0; k < m.apps[a].maxprocs; ++k, ++child) {
      const auto j = static_cast<size_t>((*where_to)[static_cast<size_t>(child)]);
      per_host[j].push_back(
          add_spawned(spawn, child, j, static_cast<uint32_t>(a), m.apps[a], nspace));
      job.node_of_rank.push_back(static_cast<uint32_t>(j));
      const std::string& name = hosts_[attempt_.members[j]]->name();
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
  }
  rdv_->add_namespace(nspace, job.node_of_rank);
  // Every host registers the namespace (its ranks may connect to the new processes) before
  // the parent hears of it: each link delivers in order.
  for (size_t j = 0; j < attempt_.members.size(); ++j) {
    job.ranks = std::move(per_host[j]);
    hosts_[attempt_.members[j]]->send_running(wire::encode(job));
  }
  std::string on;
  for (const auto& n : names) on += (on.empty() ? "" : ", ") + n;
  diag_.verbose(who + ": " + std::to_string(total) + " process(es) as spawn " +
                std::to_string(spawn) + " (PMIx namespace " + nspace + ") on " + on);
  asker.send_running(wire::encode(wire::PmixSpawnDone{m.id, kPmixSuccess, nspace}));
}

}  // namespace ferry
