#pragma once
/// \file
/// What the user asked for about CPU and accelerator binding (values only; the binding part
/// turns them into per-rank cpusets and device lists on each host).

#include <string>
#include <vector>

namespace ferry {

/// The unit each rank is bound to.
enum class BindTo { kDefault, kNone, kCore, kHwthread, kNuma, kSocket };
/// How ranks are spread over the units of a host.
enum class MapBy { kDefault, kSlot, kNode, kNuma, kSocket };

/// Binding requested on the command line / job file.
struct BindingOptions {
  BindTo bind_to = BindTo::kDefault;  ///< kDefault: contiguous core blocks, NUMA-aware
  MapBy map_by = MapBy::kDefault;
  int pe = 0;                    ///< `--map-by ...:PE=n`: cores per rank; 0 = unset
  int cpus_per_rank = 0;         ///< `--cpus-per-rank N`; 0 = floor(allowed cores / local ranks)
  bool bind_mem = false;         ///< bind memory to the rank's NUMA node(s)
  int devices_per_rank = -1;     ///< -1: 1 when the host has >= local ranks devices, else 0
  std::vector<int> devices;      ///< `--devices 0,2,4`: only these device indices
  bool isolate_devices = false;  ///< each rank sees only its own devices
  bool report_bindings = false;  ///< one line per rank before it starts
  /// A rank file's slot lists (slot_list.hpp), one per local rank of the host this copy is
  /// for, in local-rank order; "" for a rank the file does not bind. Empty: no rank file,
  /// the policy above places the ranks.
  std::vector<std::string> rank_slots;
};

}  // namespace ferry
