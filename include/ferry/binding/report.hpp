#pragma once
/// \file
/// `--report-bindings`: one line per rank saying where it runs.

#include <string>
#include <string_view>

#include "ferry/binding/plan.hpp"

namespace ferry {

/// One line, no newline, e.g.
///   "node1 rank 5 local_rank 1: cpus 12-23,60-71 (12 cores) NUMA 0 mem bound,
///    NVIDIA GPU 1 [0000:1b:00.0 NUMA 0], CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7"
/// or "node1 rank 5 local_rank 1: not bound (cpus 0-5, 6 cores) NUMA 0, no device".
/// The variables shown are those ferry set among CUDA_VISIBLE_DEVICES,
/// ASCEND_RT_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES, ZE_AFFINITY_MASK and DEVICE_ID. When the
/// CPU quota lowered the rank's thread count below its cores and ferry set a thread variable,
/// the line ends with ", 2 threads (CPU quota 8)".
/// `binding` must be one of `plan.ranks` (its devices are looked up in `plan.devices`).
std::string format_binding_report(std::string_view host, int rank, const RankBinding& binding,
                                  const HostBindingPlan& plan);

}  // namespace ferry
