// plan_bindings(): per-rank masks, thread counts and variables over the placement that
// rank_placement.cpp chose, and the notes and warnings that explain them.
#include "ferry/binding/plan.hpp"

#include <algorithm>
#include <optional>
#include <set>

#include "ferry/binding/device_assignment.hpp"
#include "ferry/binding/id_list.hpp"
#include "rank_placement.hpp"

namespace ferry {

namespace {

constexpr const char* kThreadVars[] = {"OMP_NUM_THREADS", "MKL_NUM_THREADS",
                                       "OPENBLAS_NUM_THREADS"};

std::string count_of(int n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
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

// The inputs that are the same for every rank's binding.
struct RankInputs {
  const Topology& topology;
  const std::vector<Unit>& units;
  const std::optional<RankUnits>& placed;
  const PlacementRequest& req;
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

  // A rank file names cores: its ranks are placed on cores whatever --bind-to says.
  const bool hwthreads = opt.bind_to == BindTo::kHwthread && opt.rank_slots.empty();
  const PlacementRequest req{
      .opt = opt,
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
  const bool strict = !opt.rank_slots.empty() || opt.bind_to != BindTo::kDefault ||
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

  if (opt.bind_mem && !*placed) plan.notes.emplace_back("--bind-mem ignored: ranks are not bound");
  const bool capped = std::any_of(plan.ranks.begin(), plan.ranks.end(),
                                  [](const RankBinding& r) { return r.threads_capped_by_quota; });
  if (cpu_quota) add_quota_notes(plan, *cpu_quota, L, C, *quota_threads, capped);
  for (const char* var : kThreadVars)
    if (defaulted.contains(var)) plan.defaulted_env.emplace_back(var);
  if (!plan.defaulted_env.empty()) add_thread_note(plan, placed->has_value(), capped, L);
  return plan;
}

}  // namespace ferry