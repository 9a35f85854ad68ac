#pragma once
/// \file
/// Running a short shell command to completion and keeping what it printed: horovodrun's
/// host discovery script. Blocking; the front end runs it before the job, or on a thread.

#include <string>

#include "ferry/common/result.hpp"

namespace ferry {

/// Runs `command` with /bin/sh -c in this process's environment (stdin /dev/null, stderr
/// inherited) and returns its stdout. An Error when it cannot start, is killed, or exits
/// non-zero: one line naming the command and its status.
Result<std::string> run_shell_capture(const std::string& command);

}  // namespace ferry
