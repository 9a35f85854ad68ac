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

// Which units each local rank is bound to, and its default thread count (the host's
// share of the job's placement; plan::Placement says which host a rank runs on).
struct RankUnits {
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

// ---- the steps of plan_bindings() ---------------------------------------------------------

// The cores per rank the user asked for (--cpus-per-rank or --map-by ...:PE=n); 0 = none.
Result<int> cpus_asked(const BindingOptions& opt) {
  if (opt.pe < 0 || opt.cpus_per_rank < 0)
    return make_error("--cpus-per-rank and PE= must be positive");
  if (opt.pe > 0 && opt.cpus_per_rank > 0 && opt.pe != opt.cpus_per_rank)
    return make_error("--map-by ...:PE=" + std::to_string(opt.pe) + " and --cpus-per-rank " +
                      std::to_string(opt.cpus_per_rank) + " disagree");
  return opt.pe > 0 ? opt.pe : opt.cpus_per_rank;
}

// The units ranks are placed on: every allowed core, or each of its hardware threads with
// --bind-to hwthread.
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

// The request every placement step reads.
struct Request {
  const BindingOptions& opt;
  const DeviceAssignment& dev;
  int ranks = 0;           // local ranks
  int asked = 0;           // cores per rank the user asked for; 0 = none
  bool hwthreads = false;  // --bind-to hwthread: units are hardware threads
  bool whole = false;      // --bind-to numa/socket: a rank gets whole groups
};

// How ranks are spread over the groups: the group of each rank (nullopt: linear blocks in
// core order), and the phrase that says so in the policy line.
struct GroupChoice {
  std::optional<std::vector<int>> rank_group;
  std::string how;
  bool on_devices = false;  // placed by their devices' NUMA nodes
};

GroupChoice choose_groups(const std::vector<Group>& groups, const Request& req, int n,
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
      if (keys.count(key(u))) us.push_back(u);
  }
}

// Where each rank goes when it is bound; sets the plan's policy line and adds its notes.
// Error: the cores asked per rank do not fit.
Result<RankUnits> place_bound_ranks(const Topology& topology, const std::vector<Unit>& units,
                                    const Request& req, HostBindingPlan& plan) {
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
    plan.notes.push_back("device NUMA locality unknown or unusable: cores placed without it");
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

// Where each rank goes; nullopt when ranks run unbound (--bind-to none, or more ranks than
// units: a warning). Sets the plan's policy line.
Result<std::optional<RankUnits>> place_ranks(const Topology& topology,
                                             const std::vector<Unit>& units, const Request& req,
                                             HostBindingPlan& plan) {
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

// The inputs that are the same for every rank's binding.
struct RankInputs {
  const Topology& topology;
  const std::vector<Unit>& units;
  const std::optional<RankUnits>& placed;
  const Request& req;
  const EnvLookup& user_env;
  int unbound_threads = 1;           // threads of an unbound rank
  std::optional<int> quota_threads;  // the CPU quota's threads per rank, if there is a quota
  bool strict = false;               // failing to bind is fatal (explicitly asked for)
};

// Fills `rb.cpu_mask` from `rb.cpus`; a CPU beyond cpu_set_t leaves the rank unbound.
void fill_cpu_mask(RankBinding& rb, std::vector<std::string>& warnings) {
  CPU_ZERO(&rb.cpu_mask);
  for (int cpu : rb.cpus) {
    if (cpu >= CPU_SETSIZE) {
      if (rb.bound)
        warnings.push_back("cpu " + std::to_string(cpu) + " is beyond cpu_set_t; local rank " +
                           std::to_string(rb.local_rank) + " is not bound");
      rb.bound = false;
      return;
    }
    CPU_SET(cpu, &rb.cpu_mask);
  }
}

// Fills `rb.nodemask` from `rb.numa_nodes` for MPOL_BIND; a node beyond the mask turns
// memory binding off for the rank.
void fill_nodemask(RankBinding& rb) {
  constexpr size_t kBits = 8 * sizeof(unsigned long);
  rb.bind_mem = true;
  for (int node : rb.numa_nodes) {
    if (node >= kMaxNumaNodes) {
      rb.bind_mem = false;
      return;
    }
    rb.nodemask[node / kBits] |= 1UL << (node % kBits);
  }
}

// Local rank `k`'s binding: its CPUs (placed, or every allowed one when unbound), masks,
// thread count and the variables ferry sets for it. `defaulted` collects the thread
// variables it set because the user had not.
RankBinding bind_rank(int k, const RankInputs& in, std::vector<std::string>& warnings,
                      std::set<std::string>& defaulted) {
  const auto& cores = in.topology.cores();
  RankBinding rb;
  rb.local_rank = k;
  std::set<int> core_ids, numas;
  if (in.placed) {
    for (int u : in.placed->units[k]) {
      rb.cpus.insert(rb.cpus.end(), in.units[u].pus.begin(), in.units[u].pus.end());
      core_ids.insert(in.units[u].core);
    }
    rb.threads = in.placed->threads[k];
    rb.bound = true;
    rb.strict = in.strict;
  } else {
    for (int c = 0; c < static_cast<int>(cores.size()); ++c) {
      rb.cpus.insert(rb.cpus.end(), cores[c].pus.begin(), cores[c].pus.end());
      core_ids.insert(c);
    }
    rb.threads = in.unbound_threads;
  }
  if (in.quota_threads && *in.quota_threads < rb.threads) {
    rb.threads = *in.quota_threads;
    rb.threads_capped_by_quota = true;
  }
  std::sort(rb.cpus.begin(), rb.cpus.end());
  for (int c : core_ids) numas.insert(cores[c].numa);
  rb.cores = static_cast<int>(core_ids.size());
  rb.numa_nodes.assign(numas.begin(), numas.end());
  rb.cpu_list = format_id_list(rb.cpus);
  rb.numa_list = format_id_list(rb.numa_nodes);
  fill_cpu_mask(rb, warnings);
  if (in.req.opt.bind_mem && rb.bound) fill_nodemask(rb);
  for (const char* var : kThreadVars) {
    if (in.user_env(var)) continue;
    rb.env.push_back(std::string(var) + "=" + std::to_string(rb.threads));
    defaulted.insert(var);
  }
  rb.devices = in.req.dev.rank_devices[k];
  rb.env.insert(rb.env.end(), in.req.dev.rank_env[k].begin(), in.req.dev.rank_env[k].end());
  return rb;
}

// The CPU quota's warning (more ranks than quota CPUs) and note (what it did to threads).
void add_quota_notes(HostBindingPlan& plan, const CpuQuota& quota, int L, int allowed_cores,
                     int quota_threads, bool capped) {
  const std::string cpus = quota.cpus_text();
  if (L > 1 && quota.less_than(L) && quota.less_than(allowed_cores))
    plan.warnings.push_back(std::to_string(L) + " local ranks on a " + cpus +
                            "-CPU quota: oversubscribed, each rank gets less than one CPU" +
                            " of time (" + quota.source() + ")");
  plan.notes.push_back("CPU quota " + quota.cpus_phrase() + " (" + quota.source() + "): " +
                       (capped ? "at most " + count_of(quota_threads, "thread", "threads") +
                                     " per rank for " + count_of(L, "local rank", "local ranks")
                               : std::string("thread counts unaffected")));
}

// The note naming the thread variables ferry set and why to that value (plan.defaulted_env).
void add_thread_note(HostBindingPlan& plan, bool placed, bool capped, int L) {
  std::string names;
  for (const auto& v : plan.defaulted_env) names += (names.empty() ? "" : ", ") + v;
  int lo = plan.ranks.front().threads, hi = lo;
  for (const auto& r : plan.ranks) {
    lo = std::min(lo, r.threads);
    hi = std::max(hi, r.threads);
  }
  std::string why = placed ? " (the rank's cores)" : " (allowed cores / local ranks, at least 1)";
  if (capped)
    why = " (CPU quota " + plan.cpu_quota->cpus_phrase() + " / " +
          count_of(L, "local rank", "local ranks") + ", at least 1; below " +
          (placed ? "the rank's cores)" : "allowed cores / local ranks)");
  plan.notes.push_back(names + " not set by the user: set to " + std::to_string(lo) +
                       (hi > lo ? "-" + std::to_string(hi) : "") + why);
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
  auto asked = cpus_asked(opt);
  if (!asked) return asked.error();

  auto dev = assign_devices(topology, accelerators, opt, L, user_env);
  if (!dev) return dev.error();
  plan.devices = dev->visible;
  plan.device_kind = dev->kind;
  plan.devices_per_rank = dev->per_rank;
  plan.warnings = dev->warnings;
  plan.notes = dev->notes;

  const bool hwthreads = opt.bind_to == BindTo::kHwthread;
  const Request req{.opt = opt,
                    .dev = *dev,
                    .ranks = L,
                    .asked = *asked,
                    .hwthreads = hwthreads,
                    .whole = opt.bind_to == BindTo::kNuma || opt.bind_to == BindTo::kSocket};
  const std::vector<Unit> units = units_of(topology, hwthreads);
  auto placed = place_ranks(topology, units, req, plan);
  if (!placed) return placed.error();

  const int C = static_cast<int>(topology.cores().size());
  // A CPU quota caps the threads, never the masks: L ranks of floor(Q / L) busy threads each
  // stay within Q CPUs of time, where more would be throttled (docs/binding.md).
  std::optional<int> quota_threads;
  if (cpu_quota) quota_threads = cpu_quota->threads_per_rank(L);
  // --map-by node only spreads ranks over hosts; it asks nothing of this host's cores.
  const bool strict = opt.bind_to != BindTo::kDefault ||
                      (opt.map_by != MapBy::kDefault && opt.map_by != MapBy::kNode) || *asked > 0;
  const RankInputs in{.topology = topology,
                      .units = units,
                      .placed = *placed,
                      .req = req,
                      .user_env = user_env,
                      .unbound_threads = *asked > 0 ? *asked : std::max(1, C / L),
                      .quota_threads = quota_threads,
                      .strict = strict};
  std::set<std::string> defaulted;
  for (int k = 0; k < L; ++k) plan.ranks.push_back(bind_rank(k, in, plan.warnings, defaulted));

  if (opt.bind_mem && !*placed) plan.notes.push_back("--bind-mem ignored: ranks are not bound");
  const bool capped = std::any_of(plan.ranks.begin(), plan.ranks.end(),
                                  [](const RankBinding& r) { return r.threads_capped_by_quota; });
  if (cpu_quota) add_quota_notes(plan, *cpu_quota, L, C, *quota_threads, capped);
  for (const char* var : kThreadVars)
    if (defaulted.count(var)) plan.defaulted_env.push_back(var);
  if (!plan.defaulted_env.empty()) add_thread_note(plan, placed->has_value(), capped, L);
  return plan;
}

}  // namespace ferry
