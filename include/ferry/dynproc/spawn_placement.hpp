#pragma once
/// \file
/// Where MPI_Comm_spawn's processes go: the free slots of the job's hosts, in host order,
/// as mpirun fills them (a host's slots first, then the next host's); with oversubscription
/// asked for, those beyond the free slots go round robin over the hosts, as mpirun's
/// `--oversubscribe` lets them. Pure.

#include <vector>

#include "ferry/common/result.hpp"

namespace ferry {

/// Host index of each of `count` spawned processes, given each host's free slots (`free[h]`,
/// slots less the processes running there; may be negative). An Error, its message one
/// clause for the user, when they do not fit and `oversubscribe` is off, or there is no host.
Result<std::vector<int>> place_spawned(const std::vector<int>& free, int count, bool oversubscribe);

}  // namespace ferry
