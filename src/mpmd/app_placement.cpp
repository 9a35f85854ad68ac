// MPMD placement: every part placed by place_ranks on what its hosts have left, then the
// parts' ranks merged per host into one world.

#include "ferry/mpmd/app_placement.hpp"

#include <algorithm>

namespace ferry {
namespace {

// A part's ranks on one host of the job: (global rank, part) pairs.
struct Placed {
  int rank = 0;
  int app = 0;
};

std::string program_of(const AppSpec& app) {
  return app.command.empty() ? std::string("?") : app.command.front();
}

// What a part's hosts have left after the parts before it, as a host list for place_ranks,
// with each entry's index in the job's list. A host with nothing left drops out, unless the
// part may oversubscribe and none of its hosts has room: then all stay and share the ranks.
struct FreeHosts {
  HostList left;
  std::vector<size_t> index;
  bool any_room = false;
};

Result<FreeHosts> free_hosts(const HostList& hosts, const std::vector<int>& used,
                             const AppSpec& app, bool oversubscribe, const std::string& who) {
  std::vector<size_t> eligible = app.hosts;
  if (eligible.empty())
    for (size_t i = 0; i < hosts.size(); ++i) eligible.push_back(i);
  FreeHosts f;
  for (size_t i : eligible) {
    if (i >= hosts.size()) return make_error(who + ": a host outside the job");
    if (hosts[i].slots - used[i] > 0) f.any_room = true;
  }
  for (size_t i : eligible) {
    HostEntry e = hosts[i];
    e.slots = std::max(0, hosts[i].slots - used[i]);
    if (e.max_slots > 0) {
      e.max_slots -= used[i];
      if (e.max_slots <= 0) continue;
    }
    if (e.slots == 0 && (f.any_room || !oversubscribe)) continue;
    if (e.slots == 0) e.slots = 1;  // spread evenly over the full hosts
    f.left.push_back(std::move(e));
    f.index.push_back(i);
  }
  if (f.left.empty())
    return make_error(who + ": no free slot is left on its hosts" +
                      (app.np > 0 ? " for -np " + std::to_string(app.np) : std::string()) +
                      "; add hosts or slots, or pass --oversubscribe");
  if (app.np == 0 && !f.any_room)
    return make_error(who + ": no free slot is left on its hosts; give it -np N");
  return f;
}

// The job's placement from every host's (rank, part) pairs, hosts in the job's order.
Placement merged(const HostList& hosts, std::vector<std::vector<Placed>> on_host,
                 const std::vector<int>& used, std::vector<int> sizes, int world) {
  Placement p;
  p.world_size = world;
  p.app_sizes = std::move(sizes);
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (on_host[i].empty()) continue;
    std::sort(on_host[i].begin(), on_host[i].end(),
              [](const Placed& a, const Placed& b) { return a.rank < b.rank; });
    HostPlan hp;
    hp.host = hosts[i];
    hp.node_rank = static_cast<int>(p.hosts.size());
    if (used[i] > hosts[i].slots) p.oversubscribed = true;
    for (const Placed& x : on_host[i]) {
      RankSlot r;
      r.rank = x.rank;
      r.local_rank = static_cast<int>(hp.ranks.size());
      r.node_rank = hp.node_rank;
      r.app = x.app;
      hp.ranks.push_back(r);
    }
    p.hosts.push_back(std::move(hp));
  }
  finish_placement(p);
  return p;
}

}  // namespace

Result<Placement> place_apps(const HostList& hosts, const std::vector<AppSpec>& apps,
                             bool oversubscribe, const PlacementPolicy& policy) {
  if (hosts.empty()) return make_error("no hosts to run on");
  if (apps.empty()) return make_error("no program to run");
  std::vector<int> used(hosts.size(), 0);
  std::vector<std::vector<Placed>> on_host(hosts.size());
  std::vector<int> sizes;
  int next_rank = 0;
  for (size_t k = 0; k < apps.size(); ++k) {
    const AppSpec& app = apps[k];
    const std::string who = app.where + " (" + program_of(app) + ")";
    auto room = free_hosts(hosts, used, app, oversubscribe, who);
    if (!room) return room.error();
    PlacementPolicy own = policy;
    if (app.per_host > 0) own.per_host = app.per_host;
    auto placed = place_ranks(room->left, app.np, oversubscribe, own);
    if (!placed) return make_error(who + ": " + placed.error().message);
    for (const auto& hp : placed->hosts) {
      // place_ranks keeps the order of `left`: find the host by its identity there.
      size_t at = 0;
      const HostList& left = room->left;
      while (at < left.size() && !(left[at].name == hp.host.name && left[at].user == hp.host.user &&
                                   left[at].port == hp.host.port))
        ++at;
      const size_t i = room->index[at];
      used[i] += static_cast<int>(hp.ranks.size());
      for (const auto& r : hp.ranks)
        on_host[i].push_back({next_rank + r.rank, static_cast<int>(k)});
    }
    sizes.push_back(placed->world_size);
    next_rank += placed->world_size;
  }
  return merged(hosts, std::move(on_host), used, std::move(sizes), next_rank);
}

int app_of_rank(const std::vector<int>& app_sizes, int rank) {
  int first = 0;
  for (size_t k = 0; k < app_sizes.size(); ++k) {
    first += app_sizes[k];
    if (rank < first) return static_cast<int>(k);
  }
  return app_sizes.empty() ? 0 : static_cast<int>(app_sizes.size()) - 1;
}

}  // namespace ferry
