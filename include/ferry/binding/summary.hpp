#pragma once
/// \file
/// What ferryd reports to the front end about its host: a compact, wire-friendly summary of
/// the allowed CPUs and the accelerators.

#include <string>
#include <vector>

#include "ferry/binding/accelerators.hpp"
#include "ferry/binding/topology.hpp"

namespace ferry {

/// Counts of what this host lets ferry use (after cgroup/affinity restriction).
struct TopologySummary {
  int packages = 0;
  int numa_nodes = 0;
  int cores = 0;
  int hwthreads = 0;
  std::string cpus;  ///< allowed hardware threads, "0-95"
  int nvidia_gpus = 0;
  int ascend_npus = 0;
  int amd_gpus = 0;
  int intel_gpus = 0;

  /// One line, e.g. "2 packages, 2 NUMA nodes, 48 cores, 96 hwthreads (cpus 0-95),
  /// 8 NVIDIA GPUs"; devices are left out when there are none.
  std::string to_string() const;
};

/// Summarises a loaded topology and the accelerators found on the same host.
TopologySummary summarize(const Topology& topology, const std::vector<Accelerator>& devices);

}  // namespace ferry
