#pragma once
/// \file
/// The CPUs of one host as ferryd may use them: an RAII hwloc topology, reduced to the plain
/// list of allowed cores that the planner works on.
///
/// ferryd loads it once (`load_system`), restricted to its own cgroup cpuset and affinity
/// mask, so a Docker `--cpuset-cpus`, a Slurm step or `taskset -c` around ferryd are honoured.
/// Tests load synthetic descriptions or XML instead: the same code path after loading.

#include <hwloc.h>

#include <string>
#include <vector>

#include "ferry/binding/hwloc_handles.hpp"
#include "ferry/common/result.hpp"

namespace ferry {

/// One allowed core (or, on platforms where hwloc reports no cores, one hardware thread).
struct CoreInfo {
  std::vector<int> pus;  ///< OS indices of its allowed hardware threads (what taskset uses)
  int numa = 0;          ///< OS index of its NUMA node (the first one whose cpuset holds it)
  int package = 0;       ///< logical index of its package (socket); 0 when hwloc shows none
};

/// An hwloc topology, owned. Move-only; never copies the hwloc handle.
class Topology {
 public:
  /// This machine, restricted to the CPUs this process may run on: the cgroup cpuset (hwloc
  /// drops disallowed CPUs by default) and the affinity mask (`sched_getaffinity`, so a
  /// `taskset` around ferryd counts too). Error: one line naming the hwloc step that failed.
  static Result<Topology> load_system();
  /// Loads this machine's topology now (as load_system() would) and keeps it for the next
  /// load_system() of this process, or of each process forked from it: ferryd's fork server
  /// loads it once and every job's ferryd it forks skips hwloc's discovery. The kept one is
  /// used only while the CPUs are what they were: load_system() loads afresh when the
  /// affinity mask (which a cgroup cpuset's change also sets) or the online CPUs differ.
  static void preload_system();
  /// Whether a preloaded topology waits for the next load_system() (for the tests).
  static bool has_preloaded();
  /// A synthetic topology (`hwloc_topology_set_synthetic`), e.g. "pack:2 core:24 pu:2" or
  /// "numa:4 core:24 pu:1". Error: the description was refused.
  static Result<Topology> load_synthetic(const std::string& description);
  /// A topology exported by `lstopo foo.xml`. Error: unreadable or invalid file.
  static Result<Topology> load_xml(const std::string& path);

  /// Takes over `other`'s hwloc handle; `other` is left empty (handle() == nullptr).
  Topology(Topology&& other) noexcept = default;
  /// Releases this topology's handle, then takes over `other`'s.
  Topology& operator=(Topology&& other) noexcept = default;
  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;
  /// Destroys the hwloc topology.
  ~Topology() = default;

  /// Keeps only the given hardware threads (OS indices), as a container's cpuset would;
  /// cores, NUMA nodes and packages left without any are dropped. Error: the set holds no
  /// CPU of this topology (the topology is then unchanged).
  Status restrict_to(const std::vector<int>& pus);

  /// Allowed cores in topology order (package, NUMA node, core), never empty once loaded.
  const std::vector<CoreInfo>& cores() const { return cores_; }
  /// OS indices of the NUMA nodes that hold at least one allowed core, ascending.
  std::vector<int> numa_nodes() const;
  /// Number of packages that hold at least one allowed core.
  int package_count() const;
  /// OS indices of all allowed hardware threads, ascending.
  std::vector<int> pus() const;

  /// The underlying handle, for callers that need more of hwloc (still owned here).
  hwloc_topology_t handle() const { return topo_.get(); }

 private:
  explicit Topology(HwlocTopologyPtr topo) : topo_(std::move(topo)) {}
  static Result<HwlocTopologyPtr> init();
  static Result<Topology> finish_load(HwlocTopologyPtr topo, const std::string& what);
  Status refresh();

  HwlocTopologyPtr topo_;
  std::vector<CoreInfo> cores_;
};

}  // namespace ferry
