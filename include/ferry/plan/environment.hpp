#pragma once
/// \file
/// The environment each rank gets (docs/frameworks.md): PyTorch env://, Horovod, Open MPI
/// and DeepSpeed-style variables, plus the user's exported ones.

#include <string>
#include <vector>

#include "ferry/plan/placement.hpp"

namespace ferry {

/// Job-wide inputs of the environment.
struct JobEnvironment {
  std::string master_addr;  ///< rank-0 host address reachable by all ranks
  int master_port = 29500;
  std::vector<std::string> exported;  ///< "K=V" from -x, applied over ferry's defaults
};

/// Variables shared by every rank of the job ("K=V"): sizes, MASTER_*, defaults, then the
/// exported variables (which override ferry's defaults such as MASTER_PORT).
std::vector<std::string> job_environment(const Placement& p, const JobEnvironment& in);

/// Variables of one rank ("K=V"): its rank, local and cross coordinates under every
/// framework's names. Applied after job_environment, so these always win.
std::vector<std::string> rank_environment(const Placement& p, const HostPlan& host,
                                          const RankSlot& r);

/// Resolves `-x` items: "K=V" is kept, "K" takes K's value from `lookup` (skipped with a
/// warning in `warnings` when unset). Names must be valid shell identifiers.
Result<std::vector<std::string>> resolve_exports(const std::vector<std::string>& items,
                                                 const char* (*lookup)(const char*),
                                                 std::vector<std::string>& warnings);

}  // namespace ferry
