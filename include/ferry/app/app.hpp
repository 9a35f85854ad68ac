#pragma once
/// \file
/// ferryrun as a whole: builds the launchers, console and job from a parsed config.

#include "ferry/cli/ferryrun_cli.hpp"

namespace ferry {

/// Runs the job described by `cfg` and returns ferryrun's exit status. Messages start with
/// cfg.program.
int run_ferryrun(const FrontendConfig& cfg);

/// How many ranks `job` launches, as the job places them: -np, else one per slot, else -N
/// on every host; never the slot total when fewer ranks run. 0 when the hosts cannot take
/// the ranks (the job reports why).
int ranks_to_launch(const JobOptions& job);

/// The console's options for `cfg`: its output settings, with the world size (which pads
/// rank numbers in per-rank file names) set to `world_size` ranks.
OutputOptions console_options(const FrontendConfig& cfg, int world_size);

}  // namespace ferry
