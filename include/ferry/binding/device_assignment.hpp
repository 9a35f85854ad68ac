#pragma once
/// \file
/// Which accelerators each local rank uses and what the vendor's visible-devices variable
/// says. Part of plan_bindings(); exposed for tests and for callers that only want devices.
///
/// Default (what existing scripts assume): every rank sees the host's whole list and
/// indexes it with LOCAL_RANK, so rank i "uses" device i. `--isolate-devices` shows each rank
/// only its own devices (it then finds them as device 0..k-1). A visible-devices variable set
/// by the user is never overridden; a list of indices in it is taken as the host's list.
///
/// Per kind (sources in docs/binding.md):
///  - NVIDIA: CUDA_VISIBLE_DEVICES, plus CUDA_DEVICE_ORDER=PCI_BUS_ID unless set.
///  - Ascend: ASCEND_RT_VISIBLE_DEVICES (ascending, as CANN requires), and for a rank with a
///    device DEVICE_ID and ASCEND_DEVICE_ID = the position of its first device in the list the
///    rank sees (0 with --isolate-devices), unless the user set either of the two.
///  - AMD: ROCR_VISIBLE_DEVICES only; nothing at all when the user set HIP_VISIBLE_DEVICES,
///    CUDA_VISIBLE_DEVICES or GPU_DEVICE_ORDINAL (they renumber what ROCr leaves visible).
///  - Intel: ZE_AFFINITY_MASK plus ZE_ENABLE_PCI_ID_DEVICE_ORDER=1 unless set; nothing when
///    the indices cannot be tied to the cards found (a multi-tile or unknown-tile card, an
///    integrated GPU next to discrete ones, a user's non-PCI device order) or the user set
///    ONEAPI_DEVICE_SELECTOR with device indices.

#include <optional>
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
  /// The kind the host's ranks use: the one kind ferry assigns (the first found of NVIDIA,
  /// Ascend, AMD, Intel, unless the user set another found kind's visible-devices variable),
  /// or, where ferry found no device, the kind whose variable the user set; nullopt if none.
  std::optional<AcceleratorKind> kind;
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
