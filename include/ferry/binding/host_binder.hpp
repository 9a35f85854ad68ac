#pragma once
/// \file
/// A host's binding as ferryd sets it up: the topology (hwloc) and accelerators, loaded
/// once from the device root, and the per-rank plan for the job's ranks on this host
/// (computed before any fork).

#include <optional>
#include <string>
#include <vector>

#include "ferry/binding/accelerators.hpp"
#include "ferry/binding/cpu_quota.hpp"
#include "ferry/binding/options.hpp"
#include "ferry/binding/plan.hpp"
#include "ferry/binding/topology.hpp"

namespace ferry {

/// Ascend's rank variables for global rank `rank` of `world_size` (the per-rank shell loops
/// users wrote, MindSpore and HCCL samples read them): RANK_ID=`rank`,
/// RANK_SIZE=`world_size`, each skipped when `user_env` sets it. Only for ranks on hosts
/// whose ranks use Ascend NPUs; the device variables (DEVICE_ID, ASCEND_DEVICE_ID) come with
/// the device assignment.
std::vector<std::string> ascend_rank_environment(int rank, int world_size,
                                                 const std::vector<std::string>& user_env);

/// Loads the topology and accelerators of this host and plans bindings for its ranks.
class HostBinder {
 public:
  /// Loads the topology (restricted to the CPUs ferryd may use), discovers accelerators and
  /// reads ferryd's cgroup CPU quota (read_cpu_quota()), both under `device_root` ("/"
  /// normally; a fake tree without cgroup files means no quota). A topology failure is kept
  /// as a warning: ranks then run unbound.
  void load(const std::string& device_root);

  /// The plan for `local_ranks` ranks, or an Error naming what cannot be met. `user_env` is
  /// the environment the ranks would get without ferry's binding variables. `lines`
  /// receives what to tell the user (warnings always, notes when `verbose`), each prefixed
  /// with `host`.
  Result<HostBindingPlan> plan(const BindingOptions& options, int local_ranks,
                               const std::vector<std::string>& user_env, const std::string& host,
                               bool verbose, std::vector<std::string>& lines);

  /// As above for the local ranks whose global ranks are `global_ranks` (local-rank order)
  /// in a job of `world_size` ranks. On a host whose ranks use Ascend NPUs (found, or chosen
  /// by the user through ASCEND_RT_VISIBLE_DEVICES), each rank's env also gets RANK_ID and
  /// RANK_SIZE (ascend_rank_environment(); a user's value is kept, with a warning when it
  /// cannot be right for every rank). The overload above knows no global ranks and sets
  /// neither.
  Result<HostBindingPlan> plan(const BindingOptions& options, const std::vector<int>& global_ranks,
                               int world_size, const std::vector<std::string>& user_env,
                               const std::string& host, bool verbose,
                               std::vector<std::string>& lines);

  /// One line describing the host ("2 packages, 4 NUMA nodes, 96 cores; 8 NVIDIA GPUs",
  /// then "; CPU quota 8 CPUs" when ferryd's cgroup has one), or why binding is unavailable.
  std::string summary() const;

  /// The allowed cores of each socket (slot_list.hpp's socket_core_counts()); empty when the
  /// topology could not be loaded.
  std::vector<int> socket_cores() const;

  /// The loaded hwloc topology (owned here), or null when loading failed: for libraries
  /// that would otherwise discover it again (ferryd's PMIx server).
  hwloc_topology_t topology() const { return topology_ ? topology_->handle() : nullptr; }

 private:
  std::optional<Topology> topology_;
  std::vector<Accelerator> devices_;
  std::optional<CpuQuota> cpu_quota_;
  std::string load_error_;
};

}  // namespace ferry
