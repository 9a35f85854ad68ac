#pragma once
// Private to src/session/: `ferry top ID`, the live view of a detached job on this terminal.
// Once a second it asks the job's front end for its rows over the control socket ("top"; "top
// lines N" for one rank's last lines) and draws them with the view ferryrun --top draws
// (monitor/top_view.hpp); the keys are the same. q or Ctrl-C leaves; the job goes on.

#include <string>

namespace ferry {

/// How a view ended: `why` is "" when the viewer left, else why, in one line; `gone`: the
/// front end stopped answering (the job ending, most likely: the caller reads its record).
struct TopEnd {
  std::string why;
  bool gone = false;
};

/// Shows the job whose directory is `dir` until the viewer leaves or the job's front end
/// goes away.
TopEnd run_ferry_top(const std::string& dir, const std::string& id);

}  // namespace ferry
