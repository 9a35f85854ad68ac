#pragma once
/// \file
/// ferryrun as a whole: builds the launchers, console and job from a parsed config.

#include "ferry/cli/ferryrun_cli.hpp"

namespace ferry {

/// Runs the job described by `cfg` and returns ferryrun's exit status.
int run_ferryrun(const FrontendConfig& cfg);

}  // namespace ferry
