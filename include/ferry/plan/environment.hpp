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

/// What torchrun tells each attempt's ranks about restarts.
struct ElasticEnvironment {
  int restart_count = 0;  ///< counted restarts before this attempt
  int max_restarts = 0;
  std::string run_id;  ///< the job id
};

/// The variables torchrun's workers get, for a job that may restart: TORCHELASTIC_RESTART_COUNT,
/// _MAX_RESTARTS, _RUN_ID, TORCHELASTIC_USE_AGENT_STORE=False (rank 0 hosts the env:// store,
/// as without torchrun), and NCCL_ASYNC_ERROR_HANDLING=1 / TORCH_NCCL_ASYNC_ERROR_HANDLING=1
/// (a collective whose peer died fails instead of hanging) unless the user set them: exported,
/// or in ferryrun's own environment (`lookup`). Each rank's TORCHELASTIC_ERROR_FILE is ferryd's.
std::vector<std::string> elastic_environment(const ElasticEnvironment& in,
                                             const std::vector<std::string>& exported,
                                             const char* (*lookup)(const char*));

/// Variables of one rank ("K=V"): its rank, local and cross coordinates under every
/// framework's names. Applied after job_environment, so these always win.
std::vector<std::string> rank_environment(const Placement& p, const HostPlan& host,
                                          const RankSlot& r);

/// The names among `exports` ("K=V") that ferry sets itself for every rank (RANK,
/// WORLD_SIZE, LOCAL_RANK, ...: job_environment's sizes and rank_environment's names), so
/// that an exported value of theirs never reaches a rank. In `exports`' order, once each.
std::vector<std::string> overridden_exports(const std::vector<std::string>& exports);

/// Resolves `-x` items: "K=V" is kept, "K" takes K's value from `lookup` (skipped with a
/// warning in `warnings` when unset). Names must be valid shell identifiers.
Result<std::vector<std::string>> resolve_exports(const std::vector<std::string>& items,
                                                 const char* (*lookup)(const char*),
                                                 std::vector<std::string>& warnings);

}  // namespace ferry
