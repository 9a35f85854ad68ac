#pragma once
/// \file
/// What `ferryrun --check` learns of a host from its ferryd: its release, cores and NUMA nodes
/// (hwloc, as the binding sees them), accelerators, and the versions of the software a job
/// usually needs (python3, torch, NCCL, CUDA, MPI). Blocking (it runs python3): ferryd calls
/// it on a thread of its own.

#include <string>
#include <vector>

#include "ferry/wire/messages.hpp"

namespace ferry {

/// This host, now.
wire::CheckReport check_this_host();

/// The "name version" lines of the probe script's output (exposed for tests): every line
/// "name=version" becomes "name version"; a name the script did not print is "name absent".
std::vector<std::string> software_lines(const std::string& probe_output);

}  // namespace ferry
