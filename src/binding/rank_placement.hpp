#pragma once
/// \file
/// Where plan_bindings() puts each local rank: the units ranks are placed on (cores, or
/// hardware threads), their NUMA-node or package groups, and the spreading policies
/// (aligned blocks, round-robin, device locality, core order). Internal to binding.

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ferry/binding/device_assignment.hpp"
#include "ferry/binding/options.hpp"
#include "ferry/binding/plan.hpp"
#include "ferry/binding/topology.hpp"
#include "ferry/common/result.hpp"

namespace ferry {

/// What ranks are placed on: a core, or a hardware thread with --bind-to hwthread.
struct Unit {
  std::vector<int> pus;
  int core = 0;  ///< index into Topology::cores()
  int numa = 0;
  int package = 0;
};

/// Which units each local rank is bound to, and its default thread count (the host's
/// share of the job's placement; plan::Placement says which host a rank runs on).
struct RankUnits {
  std::vector<std::vector<int>> units;
  std::vector<int> threads;
};

/// The request every placement step reads.
struct PlacementRequest {
  const BindingOptions& opt;
  const DeviceAssignment& dev;
  int ranks = 0;           ///< local ranks
  int asked = 0;           ///< cores per rank the user asked for; 0 = none
  bool hwthreads = false;  ///< --bind-to hwthread: units are hardware threads
  bool whole = false;      ///< --bind-to numa/socket: a rank gets whole groups
};

/// The units ranks are placed on: every allowed core, or each of its hardware threads with
/// --bind-to hwthread.
std::vector<Unit> units_of(const Topology& topology, bool hwthreads);

/// Where each rank goes; nullopt when ranks run unbound (--bind-to none, or more ranks than
/// units: a warning). Sets the plan's policy line and adds its notes and warnings. Error:
/// the cores asked per rank do not fit.
Result<std::optional<RankUnits>> place_ranks(const Topology& topology,
                                             const std::vector<Unit>& units,
                                             const PlacementRequest& req, HostBindingPlan& plan);

}  // namespace ferry
