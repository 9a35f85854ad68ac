// Where plan_bindings() puts each local rank (see rank_placement.hpp): units grouped by
// NUMA node or package, the ways of spreading ranks over the groups, and the policy line
// that says which one was used.
#include "rank_placement.hpp"

#include <algorithm>
#include <map>

#include "ferry/binding/id_list.hpp"
#include "ferry/binding/slot_list.hpp"

namespace ferry {

namespace {

// The units of one NUMA node (or package), in topology order.
struct Group {
  int key = 0;
  std::vector<int> units;
  std::set<int> numas;
};

std::vector<Group> make_groups(const std::vector<Unit>& units, bool by_package) {
  std::vector<Group> groups;
  std::map<int, size_t> where;
  for (size_t i = 0; i < units.size(); ++i) {
    const int key = by_package ? units[i].package : units[i].numa;
    auto [it, fresh] = where.emplace(key, groups.size());
    if (fresh) groups.push_back(Group{key, {}, {}});
    groups[it->second].units.push_back(static_cast<int>(i));
    groups[it->second].numas.insert(units[i].numa);
  }
  return groups;
}

int size_of(const Group& g) { return static_cast<int>(g.units.size()); }

// Ranks per group such that every group holds whole blocks of n units, the ranks spread as
// evenly as the free units allow; nullopt when the groups cannot hold L whole blocks.
std::optional<std::vector<int>> fill_whole_blocks(const std::vector<Group>& groups, int L, int n) {
  std::vector<int> r(groups.size(), 0);
  for (int k = 0; k < L; ++k) {
    int best = -1;
    for (size_t i = 0; i < groups.size(); ++i) {
      if ((r[i] + 1) * n > size_of(groups[i])) continue;
      if (best < 0 || size_of(groups[i]) - r[i] * n > size_of(groups[best]) - r[best] * n)
        best = static_cast<int>(i);
    }
    if (best < 0) return std::nullopt;
    ++r[best];
  }
  return r;
}

// Ranks per group in proportion to the groups' sizes (D'Hondt), ties to the lower group.
std::vector<int> proportional(const std::vector<Group>& groups, int L) {
  std::vector<int> r(groups.size(), 0);
  for (int k = 0; k < L; ++k) {
    size_t best = 0;
    for (size_t i = 1; i < groups.size(); ++i)
      if (static_cast<long long>(size_of(groups[i])) * (r[best] + 1) >
          static_cast<long long>(size_of(groups[best])) * (r[i] + 1))
        best = i;
    ++r[best];
  }
  return r;
}

// Consecutive ranks fill group 0, then group 1, ...
std::vector<int> contiguous(const std::vector<int>& per_group) {
  std::vector<int> rank_group;
  for (size_t g = 0; g < per_group.size(); ++g)
    rank_group.insert(rank_group.end(), per_group[g], static_cast<int>(g));
  return rank_group;
}

// Rank k to group k mod G, skipping groups with no room for another block of n (n = 0: no
// limit). nullopt when no group has room.
std::optional<std::vector<int>> round_robin(const std::vector<Group>& groups, int L, int n) {
  const int G = static_cast<int>(groups.size());
  std::vector<int> r(G, 0), rank_group;
  int g = 0;
  for (int k = 0; k < L; ++k) {
    int tries = 0;
    while (n > 0 && (r[g] + 1) * n > size_of(groups[g])) {
      g = (g + 1) % G;
      if (++tries > G) return std::nullopt;
    }
    rank_group.push_back(g);
    ++r[g];
    g = (g + 1) % G;
  }
  return rank_group;
}

// Gives every rank its units inside its group: blocks of min(n, size / ranks in group), or
// the whole group when `whole`.
RankUnits blocks_in_groups(const std::vector<Group>& groups, const std::vector<int>& rank_group,
                           int n, bool whole, std::vector<std::string>& notes) {
  RankUnits p;
  std::vector<int> count(groups.size(), 0), next(groups.size(), 0);
  for (int g : rank_group) ++count[g];
  for (int g : rank_group) {
    const Group& grp = groups[g];
    if (whole) {
      p.units.push_back(grp.units);
      p.threads.push_back(std::max(1, size_of(grp) / count[g]));
      continue;
    }
    const int ng = std::min(n, size_of(grp) / count[g]);
    if (ng < n && next[g] == 0)
      notes.push_back(std::to_string(count[g]) + " ranks share NUMA/package " +
                      std::to_string(grp.key) + " (" + std::to_string(size_of(grp)) +
                      " cpus): " + std::to_string(ng) + " each instead of " + std::to_string(n));
    const int first = next[g]++ * ng;
    p.units.emplace_back(grp.units.begin() + first, grp.units.begin() + first + ng);
    p.threads.push_back(ng);
  }
  return p;
}

RankUnits linear(int units, int L, int n) {
  RankUnits p;
  for (int k = 0; k < L; ++k) {
    std::vector<int> block;
    for (int u = k * n; u < (k + 1) * n && u < units; ++u) block.push_back(u);
    p.units.push_back(std::move(block));
    p.threads.push_back(n);
  }
  return p;
}

// Device locality: rank -> group holding its device's NUMA node; nullopt when some rank's
// device has no known node here or a group cannot give each of its ranks one unit.
std::optional<std::vector<int>> by_device(const std::vector<Group>& groups,
                                          const std::vector<int>& rank_numa) {
  std::vector<int> rank_group, count(groups.size(), 0);
  for (int numa : rank_numa) {
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const Group& g) { return g.numas.contains(numa); });
    if (numa < 0 || it == groups.end()) return std::nullopt;
    const int g = static_cast<int>(it - groups.begin());
    if (++count[g] > size_of(groups[g])) return std::nullopt;
    rank_group.push_back(g);
  }
  return rank_group;
}

const char* bind_name(BindTo b) {
  switch (b) {
    case BindTo::kHwthread:
      return "hwthread";
    case BindTo::kNuma:
      return "numa";
    case BindTo::kSocket:
      return "socket";
    default:
      return "core";
  }
}

// How ranks are spread over the groups: the group of each rank (nullopt: linear blocks in
// core order), and the phrase that says so in the policy line.
struct GroupChoice {
  std::optional<std::vector<int>> rank_group;
  std::string how;
  bool on_devices = false;  // placed by their devices' NUMA nodes
};

GroupChoice choose_groups(const std::vector<Group>& groups, const PlacementRequest& req, int n,
                          bool by_package) {
  const BindingOptions& opt = req.opt;
  const std::string group_name = by_package ? "packages" : "NUMA nodes";
  const bool default_map = opt.map_by == MapBy::kDefault || opt.map_by == MapBy::kNode;
  GroupChoice c;
  if (opt.map_by == MapBy::kSlot) {
    c.how = "in core order";
  } else if (default_map && req.dev.per_rank > 0 &&
             (c.rank_group = by_device(groups, req.dev.rank_numa))) {
    c.how = "on their devices' " + group_name;
    c.on_devices = true;
  } else if (opt.map_by == MapBy::kNuma || opt.map_by == MapBy::kSocket) {
    c.rank_group = round_robin(groups, req.ranks, req.whole ? 0 : n);
    c.how =
        c.rank_group ? "round-robin over " + group_name : "in core order (no room for round-robin)";
  } else if (req.whole) {
    c.rank_group = contiguous(proportional(groups, req.ranks));
    c.how = "spread over " + group_name;
  } else if (auto per_group = fill_whole_blocks(groups, req.ranks, n)) {
    c.rank_group = contiguous(*per_group);
    c.how = groups.size() > 1 ? "aligned to " + group_name : "in core order";
  } else {
    c.how = "in core order (blocks cannot align to " + group_name + ")";
  }
  return c;
}

// Linear blocks with --bind-to numa/socket: binds each rank to every unit of the groups its
// block touches.
void widen_to_groups(RankUnits& placed, const std::vector<Unit>& units, bool by_package) {
  auto key = [&](int u) { return by_package ? units[u].package : units[u].numa; };
  for (auto& us : placed.units) {
    std::set<int> keys;
    for (int u : us) keys.insert(key(u));
    us.clear();
    for (int u = 0; u < static_cast<int>(units.size()); ++u)
      if (keys.contains(key(u))) us.push_back(u);
  }
}

// Where each rank goes when it is bound; sets the plan's policy line and adds its notes.
// Error: the cores asked per rank do not fit.
Result<RankUnits> place_bound_ranks(const Topology& topology, const std::vector<Unit>& units,
                                    const PlacementRequest& req, HostBindingPlan& plan) {
  const BindingOptions& opt = req.opt;
  const int L = req.ranks;
  const int U = static_cast<int>(units.size());
  const int n = req.asked > 0 ? req.asked : U / L;
  if (static_cast<long long>(n) * L > U)
    return make_error("--cpus-per-rank " + std::to_string(n) + " for " + std::to_string(L) +
                      " local ranks needs " + std::to_string(n * L) + " " +
                      (req.hwthreads ? "hwthreads" : "cores") + "; this host allows " +
                      std::to_string(U) + " (" + format_id_list(topology.pus()) + ")");
  const bool by_package = opt.map_by == MapBy::kSocket ||
                          (opt.map_by != MapBy::kNuma && opt.bind_to == BindTo::kSocket);
  const auto groups = make_groups(units, by_package);
  const GroupChoice choice = choose_groups(groups, req, n, by_package);
  const bool default_map = opt.map_by == MapBy::kDefault || opt.map_by == MapBy::kNode;
  if (default_map && req.dev.per_rank > 0 && !choice.on_devices)
    plan.notes.emplace_back("device NUMA locality unknown or unusable: cores placed without it");
  RankUnits placed = choice.rank_group
                         ? blocks_in_groups(groups, *choice.rank_group, n, req.whole, plan.notes)
                         : linear(U, L, n);
  if (!choice.rank_group && req.whole) widen_to_groups(placed, units, by_package);
  const std::string each =
      req.whole ? std::string("whole ") + (by_package ? "package" : "NUMA node") + " per rank"
                : std::to_string(n) + " " + (req.hwthreads ? "hwthread" : "core") +
                      (n == 1 ? "" : "s") + " per rank";
  plan.policy = std::string(bind_name(opt.bind_to)) + ": " + each + ", " + choice.how;
  return placed;
}

}  // namespace

std::vector<Unit> units_of(const Topology& topology, bool hwthreads) {
  std::vector<Unit> units;
  const auto& cores = topology.cores();
  for (size_t c = 0; c < cores.size(); ++c) {
    const CoreInfo& ci = cores[c];
    if (hwthreads) {
      for (int pu : ci.pus) units.push_back(Unit{{pu}, static_cast<int>(c), ci.numa, ci.package});
    } else {
      units.push_back(Unit{ci.pus, static_cast<int>(c), ci.numa, ci.package});
    }
  }
  return units;
}

Result<RankUnits> place_by_slots(const Topology& topology, const std::vector<Unit>& units,
                                 const PlacementRequest& req, HostBindingPlan& plan) {
  const auto& slots = req.opt.rank_slots;
  if (static_cast<int>(slots.size()) != req.ranks)
    return make_error("the rank file binds " + std::to_string(slots.size()) + " ranks here, not " +
                      std::to_string(req.ranks));
  const std::vector<int> sockets = socket_core_counts(topology);
  RankUnits r;
  std::vector<int> every(units.size());
  for (size_t u = 0; u < units.size(); ++u) every[u] = static_cast<int>(u);
  for (size_t k = 0; k < slots.size(); ++k) {
    if (slots[k].empty()) {  // not bound by the file: every allowed core
      r.units.push_back(every);
      r.threads.push_back(std::max(1, static_cast<int>(units.size()) / req.ranks));
      continue;
    }
    auto cores = slot_list_cores(slots[k], sockets);
    if (!cores)
      return make_error("local rank " + std::to_string(k) + ": slot=" + slots[k] + ": " +
                        cores.error().message);
    r.units.push_back(*cores);  // units are cores here: unit index == core index
    r.threads.push_back(static_cast<int>(cores->size()));
  }
  plan.policy = "rank file: each rank on the cores its slot list names";
  return r;
}

Result<std::optional<RankUnits>> place_ranks(const Topology& topology,
                                             const std::vector<Unit>& units,
                                             const PlacementRequest& req, HostBindingPlan& plan) {
  if (!req.opt.rank_slots.empty()) {
    auto placed = place_by_slots(topology, units, req, plan);
    if (!placed) return placed.error();
    return std::optional<RankUnits>(std::move(*placed));
  }
  const int L = req.ranks;
  const int U = static_cast<int>(units.size());
  const char* unit_name = req.hwthreads ? "hwthreads" : "cores";
  if (req.opt.bind_to == BindTo::kNone) {
    plan.policy = "none (--bind-to none)";
    return std::optional<RankUnits>();
  }
  if (L > U) {
    plan.policy = "none: oversubscribed";
    plan.warnings.push_back(std::to_string(L) + " local ranks on " + std::to_string(U) +
                            " allowed " + unit_name + ": oversubscribed, ranks are not bound");
    if (req.asked > 0)
      return make_error("--cpus-per-rank " + std::to_string(req.asked) + " for " +
                        std::to_string(L) + " local ranks needs " + std::to_string(req.asked * L) +
                        " " + unit_name + "; this host allows " + std::to_string(U));
    return std::optional<RankUnits>();
  }
  auto placed = place_bound_ranks(topology, units, req, plan);
  if (!placed) return placed.error();
  return std::optional<RankUnits>(std::move(*placed));
}

}  // namespace ferry
