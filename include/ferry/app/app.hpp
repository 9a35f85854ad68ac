#pragma once
/// \file
/// ferryrun as a whole: builds the launchers, console and job from a parsed config.

#include <string>
#include <vector>

#include "ferry/cli/ferryrun_cli.hpp"
#include "ferry/plan/placement.hpp"

namespace ferry {

/// Runs the job described by `cfg` and returns ferryrun's exit status. Messages start with
/// cfg.program. A job whose hosts a discovery script finds (horovodrun's elastic mode) gets
/// them first: its hosts, -np and launcher are settled here, before any host is reached.
int run_ferryrun(FrontendConfig cfg);

/// `ferry up`, `ferry down`, `ferry pools`: the warm pool (docs/pool.md). `args[0]` is the
/// program, `args[1]` the command. Returns the exit status; messages start with "ferry CMD:".
int run_pool_tool(const std::vector<std::string>& args);

/// The console's options for `cfg`, for the ranks as `placed` puts them: their count pads
/// rank numbers in per-rank file names, and the host tag style names each rank's host.
OutputOptions console_options(const FrontendConfig& cfg, const Placement& placed);

}  // namespace ferry
