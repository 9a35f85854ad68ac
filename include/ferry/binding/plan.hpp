#pragma once
/// \file
/// Per-rank binding of one host: which CPUs, which NUMA nodes for memory, which accelerators,
/// and the thread/device variables each local rank gets. Pure computation over a Topology and
/// the discovered accelerators; ferryd runs it once per job, before forking any rank.
///
/// Default policy (BindTo::kDefault, MapBy::kDefault), the one users ask for: each local
/// rank gets a contiguous block of floor(allowed cores / local ranks) cores; the blocks are
/// spread evenly over the NUMA nodes and none is split across two NUMA nodes whenever such a
/// placement exists (else the blocks are laid out in core order). When ranks use devices, a
/// rank's block is taken from its first device's NUMA node. More local ranks than allowed
/// cores: no binding, a warning. Thread counts also respect the cgroup's CPU quota when one is
/// given (read_cpu_quota()). See docs/binding.md for every policy.

#include <sched.h>

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "ferry/binding/accelerators.hpp"
#include "ferry/binding/cpu_quota.hpp"
#include "ferry/binding/env_lookup.hpp"
#include "ferry/binding/options.hpp"
#include "ferry/binding/topology.hpp"
#include "ferry/common/result.hpp"

namespace ferry {

/// NUMA node masks handed to set_mempolicy: up to this many node ids.
inline constexpr int kMaxNumaNodes = 1024;
inline constexpr size_t kNodemaskWords = kMaxNumaNodes / (8 * sizeof(unsigned long));

/// Everything one local rank needs; the masks are ready for the child (no allocation there).
struct RankBinding {
  int local_rank = 0;
  /// false: the rank runs unbound (oversubscribed host, `--bind-to none`, or the CPUs did
  /// not fit a cpu_set_t); `cpus` then lists every allowed CPU, for the report.
  bool bound = false;
  std::vector<int> cpus;        ///< OS indices of the hardware threads it is bound to, ascending
  std::string cpu_list;         ///< `cpus` as "0-11,48-59"
  int cores = 0;                ///< whole cores in `cpus` (for the report)
  cpu_set_t cpu_mask{};         ///< `cpus` as a mask; meaningful when `bound`
  std::vector<int> numa_nodes;  ///< NUMA nodes of `cpus` (OS indices), ascending
  std::string numa_list;        ///< `numa_nodes` as "0-1"
  /// Memory bound to `numa_nodes` (MPOL_BIND) in the child; false when not asked, when the
  /// rank is unbound, or after disable_memory_binding().
  bool bind_mem = false;
  std::array<unsigned long, kNodemaskWords> nodemask{};  ///< `numa_nodes` as a kernel nodemask
  /// Failing to bind CPUs in the child is fatal only when the user asked for a binding
  /// explicitly (`--bind-to`, `--map-by`, `--cpus-per-rank`); the default is best effort.
  bool strict = false;
  int threads = 1;  ///< default OMP/MKL/OpenBLAS thread count for this rank
  /// `threads` was lowered to the rank's share of the CPU quota (its cores allowed more).
  bool threads_capped_by_quota = false;
  std::vector<int> devices;      ///< Accelerator::index of the devices this rank uses
  std::vector<std::string> env;  ///< "K=V" ferry adds for this rank (never one the user set)
};

/// The whole host's decision.
struct HostBindingPlan {
  std::vector<RankBinding> ranks;  ///< one per local rank, in local-rank order
  /// One line each, shown to the user (oversubscription, refused requests, ...).
  std::vector<std::string> warnings;
  /// One line each, for --verbose (what was defaulted and why).
  std::vector<std::string> notes;
  /// Thread variables ferry set because the user had not (e.g. {"OMP_NUM_THREADS"}).
  std::vector<std::string> defaulted_env;
  std::string policy;  ///< one-line description, e.g. "cores: 12 per rank, NUMA-aligned"
  int devices_per_rank = 0;
  /// The accelerators ranks were given (one kind; Accelerator::index order); empty if none.
  std::vector<Accelerator> devices;
  /// The accelerator kind of this host's ranks (DeviceAssignment::kind): known even when no
  /// device could be given to a rank; nullopt when the host has none and the user chose none.
  std::optional<AcceleratorKind> device_kind;
  /// The CPU quota the thread counts respect (as given to plan_bindings()); nullopt: none.
  std::optional<CpuQuota> cpu_quota;
};

/// Computes the binding of `local_ranks` ranks on the host described by `topology` and
/// `accelerators`. `user_env` answers whether the user set OMP_NUM_THREADS,
/// CUDA_VISIBLE_DEVICES, ...; those are never overridden. Errors (one line each): a request
/// that cannot be met, e.g. `--cpus-per-rank 8` for 4 ranks on 24 cores, `--devices 9` on a
/// host with 8 GPUs, `--map-by ...:PE=2` contradicting `--cpus-per-rank 4`.
///
/// `cpu_quota` (the cgroup's CFS quota, Q CPUs) lowers the thread counts only, never the
/// cpu masks: each rank's threads become min(its count, max(1, floor(Q / local_ranks))),
/// i.e. floor(min(allowed cores, Q) / local ranks) by default; more than one local rank and
/// more ranks than Q (when Q is below the allowed cores) adds a warning.
Result<HostBindingPlan> plan_bindings(const Topology& topology,
                                      const std::vector<Accelerator>& accelerators,
                                      const BindingOptions& options, int local_ranks,
                                      const EnvLookup& user_env,
                                      const std::optional<CpuQuota>& cpu_quota = std::nullopt);

/// Turns memory binding off for every rank (after probe_memory_binding() found the kernel or
/// container refuses it) and records `why` as a warning.
void disable_memory_binding(HostBindingPlan& plan, const std::string& why);

}  // namespace ferry
