#pragma once
/// \file
/// mpirun's placement and binding words (`--bind-to`, `--map-by`, `--rank-by`, `--devices`)
/// turned into BindingOptions and the PlacementPolicy. Shared by the command line and the
/// job file's [binding] table.

#include <string>
#include <vector>

#include "ferry/common/result.hpp"
#include "ferry/frontend/job_options.hpp"

namespace ferry {

/// Applies `--bind-to` text: none, core, hwthread, socket, numa (also `package`, `l3cache`
/// read as socket), with Open MPI's `:overload-allowed` / `:if-supported` modifiers
/// (accepted, no effect) and MPICH hydra's count (`core:N`: N cores per rank, as PE=N; `:1`
/// with the other units). Errors quote the bad word, without a flag name (callers prefix).
Status apply_bind_to(const std::string& text, BindingOptions& binding);

/// Applies `--map-by` text to `job`: `slot`, `node` (round-robin over hosts), `core` and
/// `hwthread` (as slot, binding to that unit unless --bind-to says otherwise), `numa`,
/// `socket`, `ppr:N:node` (N ranks per host), with modifiers `:PE=n` (n cores per rank),
/// `:OVERSUBSCRIBE`, `:NOOVERSUBSCRIBE`, `:SPAN` and `:DISPLAY` (accepted, no effect);
/// modifier names are case-insensitive and may be joined with ','. Sets the mapping, pe,
/// per-host count and oversubscription as the text says, resetting those it does not name.
Status apply_map_by(const std::string& text, JobOptions& job);

/// Applies `--rank-by` text: `slot` (also core, hwthread: contiguous per host) or `node`
/// (round-robin over hosts).
Status apply_rank_by(const std::string& text, PlacementPolicy& policy);

/// Parses a device list "0,2,4" (non-negative indices, no repeats).
Result<std::vector<int>> parse_device_list(const std::string& text);

}  // namespace ferry
