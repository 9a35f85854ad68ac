#pragma once
/// \file
/// Which accelerators each local rank uses and what the vendor's visible-devices variable
/// says. Part of plan_bindings(); exposed for tests and for callers that only want devices.
///
/// Default (what existing scripts assume): every rank sees the host's whole list and
/// indexes it with LOCAL_RANK, so rank i "uses" device i. `--isolate-devices` shows each rank
/// only its own devices (it then finds them as device 0..k-1). A visible-devices variable set
/// by the user is never overridden; a list of indices in it is taken as the host's list.

#include <string>
#include <vector>

#include "ferry/binding/accelerators.hpp"
#include "ferry/binding/env_lookup.hpp"
#include "ferry/binding/options.hpp"
#include "ferry/binding/topology.hpp"
#include "ferry/common/result.hpp"

namespace ferry {

/// Devices of one host, per local rank.
struct DeviceAssignment {
  std::vector<Accelerator> visible;  ///< the host list ranks see (one kind), in list order
  int per_rank = 0;                  ///< devices each rank uses
  std::vector<std::vector<int>> rank_devices;  ///< per local rank: Accelerator::index values
  /// Per local rank: the OS NUMA node of its first device, or -1 (no device, or locality
  /// unknown). Taken from sysfs numa_node, else from local_cpulist when it names one node.
  std::vector<int> rank_numa;
  std::vector<std::vector<std::string>> rank_env;  ///< per local rank: "K=V" to add
  std::vector<std::string> warnings;
  std::vector<std::string> notes;
};

/// Assigns devices to `local_ranks` ranks (see the file comment). `user_env` tells whether the
/// user set the vendor variable or CUDA_DEVICE_ORDER. Errors: `--devices` names an index
/// the host lacks, `--devices-per-rank` asks for more than the host has, or asks for devices
/// on a host without any.
Result<DeviceAssignment> assign_devices(const Topology& topology,
                                        const std::vector<Accelerator>& accelerators,
                                        const BindingOptions& options, int local_ranks,
                                        const EnvLookup& user_env);

}  // namespace ferry
