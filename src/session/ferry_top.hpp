#pragma once
// Private to src/session/: `ferry top ID`, the live view of a detached job on this terminal.
// Once a second it asks the job's front end for its rows over the control socket ("top"; "top
// lines N" for one rank's last lines) and draws them with the view ferryrun --top draws
// (monitor/top_view.hpp); the keys are the same. q or Ctrl-C leaves; the job goes on.

#include <string>

namespace ferry {

/// Shows the job whose directory is `dir` until the viewer leaves or the job's front end
/// goes away. Returns "" when the viewer left, else why the view ended, in one line.
std::string run_ferry_top(const std::string& dir, const std::string& id);

}  // namespace ferry
