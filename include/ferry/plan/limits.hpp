#pragma once
/// \file
/// How large a job may be. A host's ranks travel in one HostSpec frame (at most 16 MiB,
/// wire::kMaxFrame), each rank's entry and environment some hundreds of bytes: the limits
/// keep a job well inside that, and refuse an absurd -np before anything is placed or sent.

#include <string>

#include "ferry/common/result.hpp"
#include "ferry/plan/placement.hpp"

namespace ferry {

/// Most ranks in one job.
inline constexpr int kMaxRanks = 65536;
/// Most ranks on one host (one HostSpec frame holds them all).
inline constexpr int kMaxRanksPerHost = 8192;

/// Checks a placement against kMaxRanks and kMaxRanksPerHost; the Error names the limit
/// and, for a host, its name and its rank count.
Status check_job_size(const Placement& placement);

}  // namespace ferry
