#include "ferry/binding/plan.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "ferry/binding/device_assignment.hpp"
#include "ferry/binding/id_list.hpp"

namespace ferry {

namespace {

constexpr const char* kThreadVars[] = {"OMP_NUM_THREADS", "MKL_NUM_THREADS",
                                       "OPENBLAS_NUM_THREADS"};

// What ranks are placed on: a core, or a hardware thread with --bind-to hwthread.
struct Unit {
  std::vector<int> pus;
  int core = 0;  // index into Topology::cores()
  int numa = 0;
  int package = 0;
};

// The units of one NUMA node (or package), in topology order.
struct Group {
  int key = 0;
  std::vector<int> units;
  std::set<int> numas;
};

// Where each rank goes: its units and its default thread count.
struct Placement {
  std::vector<std::vector<int>> units;
  std::vector<int> threads;
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
Placement blocks_in_groups(const std::vector<Group>& groups, const std::vector<int>& rank_group,
                           int n, bool whole, std::vector<std::string>& notes) {
  Placement p;
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

Placement linear(int units, int L, int n) {
  Placement p;
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
                           [&](const Group& g) { return g.numas.count(numa) > 0; });
    if (numa < 0 || it == groups.end()) return std::nullopt;
    const int g = static_cast<int>(it - groups.begin());
    if (++count[g] > size_of(groups[g])) return std::nullopt;
    rank_group.push_back(g);
  }
  return rank_group;
}

std::string count_of(int n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
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

}  // namespace

void disable_memory_binding(HostBindingPlan& plan, const std::string& why) {
  bool any = false;
  for (auto& r : plan.ranks) {
    any = any || r.bind_mem;
    r.bind_mem = false;
  }
  if (any) plan.warnings.push_back("memory binding disabled: " + why);
}

Result<HostBindingPlan> plan_bindings(const Topology& topology,
                                      const std::vector<Accelerator>& accelerators,
                                      const BindingOptions& opt, int local_ranks,
                                      const EnvLookup& user_env,
                                      const std::optional<CpuQuota>& cpu_quota) {
  HostBindingPlan plan;
  plan.cpu_quota = cpu_quota;
  const int L = local_ranks;
  if (L <= 0) return plan;
  if (opt.pe < 0 || opt.cpus_per_rank < 0)
    return make_error("--cpus-per-rank and PE= must be positive");
  if (opt.pe > 0 && opt.cpus_per_rank > 0 && opt.pe != opt.cpus_per_rank)
    return make_error("--map-by ...:PE=" + std::to_string(opt.pe) + " and --cpus-per-rank " +
                      std::to_string(opt.cpus_per_rank) + " disagree");
  const int asked = opt.pe > 0 ? opt.pe : opt.cpus_per_rank;

  auto dev = assign_devices(topology, accelerators, opt, L, user_env);
  if (!dev) return dev.error();
  plan.devices = dev->visible;
  plan.device_kind = dev->kind;
  plan.devices_per_rank = dev->per_rank;
  plan.warnings = dev->warnings;
  plan.notes = dev->notes;

  const auto& cores = topology.cores();
  const bool hw = opt.bind_to == BindTo::kHwthread;
  std::vector<Unit> units;
  for (size_t c = 0; c < cores.size(); ++c) {
    const CoreInfo& ci = cores[c];
    if (hw) {
      for (int pu : ci.pus) units.push_back(Unit{{pu}, static_cast<int>(c), ci.numa, ci.package});
    } else {
      units.push_back(Unit{ci.pus, static_cast<int>(c), ci.numa, ci.package});
    }
  }
  const int C = static_cast<int>(cores.size());
  const int U = static_cast<int>(units.size());
  const bool whole = opt.bind_to == BindTo::kNuma || opt.bind_to == BindTo::kSocket;
  const char* unit_name = hw ? "hwthreads" : "cores";

  // ---- where each rank goes ---------------------------------------------------------------
  std::optional<Placement> placed;
  if (opt.bind_to == BindTo::kNone) {
    plan.policy = "none (--bind-to none)";
  } else if (L > U) {
    plan.policy = "none: oversubscribed";
    plan.warnings.push_back(std::to_string(L) + " local ranks on " + std::to_string(U) +
                            " allowed " + unit_name + ": oversubscribed, ranks are not bound");
    if (asked > 0)
      return make_error("--cpus-per-rank " + std::to_string(asked) + " for " + std::to_string(L) +
                        " local ranks needs " + std::to_string(asked * L) + " " + unit_name +
                        "; this host allows " + std::to_string(U));
  } else {
    const int n = asked > 0 ? asked : U / L;
    if (static_cast<long long>(n) * L > U)
      return make_error("--cpus-per-rank " + std::to_string(n) + " for " + std::to_string(L) +
                        " local ranks needs " + std::to_string(n * L) + " " + unit_name +
                        "; this host allows " + std::to_string(U) + " (" +
                        format_id_list(topology.pus()) + ")");
    const bool by_package = opt.map_by == MapBy::kSocket ||
                            (opt.map_by != MapBy::kNuma && opt.bind_to == BindTo::kSocket);
    const auto groups = make_groups(units, by_package);
    const char* group_name = by_package ? "packages" : "NUMA nodes";
    const bool default_map = opt.map_by == MapBy::kDefault || opt.map_by == MapBy::kNode;
    std::optional<std::vector<int>> rank_group;
    std::string how;
    if (opt.map_by == MapBy::kSlot) {
      how = "in core order";
    } else if (default_map && dev->per_rank > 0 &&
               (rank_group = by_device(groups, dev->rank_numa))) {
      how = std::string("on their devices' ") + group_name;
    } else if (opt.map_by == MapBy::kNuma || opt.map_by == MapBy::kSocket) {
      rank_group = round_robin(groups, L, whole ? 0 : n);
      how = std::string("round-robin over ") + group_name;
      if (!rank_group) how = "in core order (no room for round-robin)";
    } else if (whole) {
      rank_group = contiguous(proportional(groups, L));
      how = std::string("spread over ") + group_name;
    } else if (auto per_group = fill_whole_blocks(groups, L, n)) {
      rank_group = contiguous(*per_group);
      how = groups.size() > 1 ? std::string("aligned to ") + group_name : "in core order";
    } else {
      how = std::string("in core order (blocks cannot align to ") + group_name + ")";
    }
    if (default_map && dev->per_rank > 0 && !how.starts_with("on their devices"))
      plan.notes.push_back("device NUMA locality unknown or unusable: cores placed without it");
    placed =
        rank_group ? blocks_in_groups(groups, *rank_group, n, whole, plan.notes) : linear(U, L, n);
    if (!rank_group && whole) {
      // Linear blocks with --bind-to numa/socket: bind each to the groups its block touches.
      for (auto& us : placed->units) {
        std::set<int> keys;
        for (int u : us) keys.insert(by_package ? units[u].package : units[u].numa);
        us.clear();
        for (int u = 0; u < U; ++u)
          if (keys.count(by_package ? units[u].package : units[u].numa)) us.push_back(u);
      }
    }
    const std::string each =
        whole ? std::string("whole ") + (by_package ? "package" : "NUMA node") + " per rank"
              : std::to_string(n) + " " + (hw ? "hwthread" : "core") + (n == 1 ? "" : "s") +
                    " per rank";
    plan.policy = std::string(bind_name(opt.bind_to)) + ": " + each + ", " + how;
  }

  // ---- per-rank result ---------------------------------------------------------------------
  const int unbound_threads = asked > 0 ? asked : std::max(1, C / L);
  // A CPU quota caps the threads, never the masks: L ranks of floor(Q / L) busy threads each
  // stay within Q CPUs of time, where more would be throttled (docs/binding.md).
  const int quota_threads = cpu_quota ? cpu_quota->threads_per_rank(L) : 0;
  // --map-by node only spreads ranks over hosts; it asks nothing of this host's cores.
  const bool strict = opt.bind_to != BindTo::kDefault ||
                      (opt.map_by != MapBy::kDefault && opt.map_by != MapBy::kNode) || asked > 0;
  std::set<std::string> defaulted;
  for (int k = 0; k < L; ++k) {
    RankBinding rb;
    rb.local_rank = k;
    CPU_ZERO(&rb.cpu_mask);
    std::set<int> core_ids, numas;
    if (placed) {
      for (int u : placed->units[k]) {
        rb.cpus.insert(rb.cpus.end(), units[u].pus.begin(), units[u].pus.end());
        core_ids.insert(units[u].core);
      }
      rb.threads = placed->threads[k];
      rb.bound = true;
      rb.strict = strict;
    } else {
      for (int c = 0; c < C; ++c) {
        rb.cpus.insert(rb.cpus.end(), cores[c].pus.begin(), cores[c].pus.end());
        core_ids.insert(c);
      }
      rb.threads = unbound_threads;
    }
    if (cpu_quota && quota_threads < rb.threads) {
      rb.threads = quota_threads;
      rb.threads_capped_by_quota = true;
    }
    std::sort(rb.cpus.begin(), rb.cpus.end());
    for (int c : core_ids) numas.insert(cores[c].numa);
    rb.cores = static_cast<int>(core_ids.size());
    rb.numa_nodes.assign(numas.begin(), numas.end());
    rb.cpu_list = format_id_list(rb.cpus);
    rb.numa_list = format_id_list(rb.numa_nodes);
    for (int cpu : rb.cpus) {
      if (cpu >= CPU_SETSIZE) {
        if (rb.bound)
          plan.warnings.push_back("cpu " + std::to_string(cpu) +
                                  " is beyond cpu_set_t; local rank " + std::to_string(k) +
                                  " is not bound");
        rb.bound = false;
        break;
      }
      CPU_SET(cpu, &rb.cpu_mask);
    }
    if (opt.bind_mem && rb.bound) {
      rb.bind_mem = true;
      for (int node : rb.numa_nodes) {
        if (node >= kMaxNumaNodes) {
          rb.bind_mem = false;
          break;
        }
        rb.nodemask[node / (8 * sizeof(unsigned long))] |= 1UL
                                                           << (node % (8 * sizeof(unsigned long)));
      }
    }
    for (const char* var : kThreadVars) {
      if (user_env(var)) continue;
      rb.env.push_back(std::string(var) + "=" + std::to_string(rb.threads));
      defaulted.insert(var);
    }
    rb.devices = dev->rank_devices[k];
    rb.env.insert(rb.env.end(), dev->rank_env[k].begin(), dev->rank_env[k].end());
    plan.ranks.push_back(std::move(rb));
  }
  if (opt.bind_mem && !placed) plan.notes.push_back("--bind-mem ignored: ranks are not bound");
  const bool capped = std::any_of(plan.ranks.begin(), plan.ranks.end(),
                                  [](const RankBinding& r) { return r.threads_capped_by_quota; });
  if (cpu_quota) {
    const std::string quota = cpu_quota->cpus_text();
    if (L > 1 && cpu_quota->less_than(L) && cpu_quota->less_than(C))
      plan.warnings.push_back(std::to_string(L) + " local ranks on a " + quota +
                              "-CPU quota: oversubscribed, each rank gets less than one CPU" +
                              " of time (" + cpu_quota->source() + ")");
    plan.notes.push_back("CPU quota " + cpu_quota->cpus_phrase() + " (" + cpu_quota->source() +
                         "): " +
                         (capped ? "at most " + count_of(quota_threads, "thread", "threads") +
                                       " per rank for " + count_of(L, "local rank", "local ranks")
                                 : std::string("thread counts unaffected")));
  }
  for (const char* var : kThreadVars)
    if (defaulted.count(var)) plan.defaulted_env.push_back(var);
  if (!plan.defaulted_env.empty()) {
    std::string names;
    for (const auto& v : plan.defaulted_env) names += (names.empty() ? "" : ", ") + v;
    int lo = plan.ranks.front().threads, hi = lo;
    for (const auto& r : plan.ranks) {
      lo = std::min(lo, r.threads);
      hi = std::max(hi, r.threads);
    }
    std::string why = placed ? " (the rank's cores)" : " (allowed cores / local ranks, at least 1)";
    if (capped)
      why = " (CPU quota " + cpu_quota->cpus_phrase() + " / " +
            count_of(L, "local rank", "local ranks") + ", at least 1; below " +
            (placed ? "the rank's cores)" : "allowed cores / local ranks)");
    plan.notes.push_back(names + " not set by the user: set to " + std::to_string(lo) +
                         (hi > lo ? "-" + std::to_string(hi) : "") + why);
  }
  return plan;
}

}  // namespace ferry
