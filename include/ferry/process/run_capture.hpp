#pragma once
/// \file
/// Running a short shell command to completion and keeping what it printed: horovodrun's
/// host discovery script. Blocking; the front end runs it before the job, or on a thread.

#include <chrono>
#include <string>
#include <vector>

#include "ferry/common/result.hpp"

namespace ferry {

/// Runs `command` with /bin/sh -c in this process's environment (stdin /dev/null, stderr
/// inherited) and returns its stdout. An Error when it cannot start, is killed, or exits
/// non-zero: one line naming the command and its status.
Result<std::string> run_shell_capture(const std::string& command);

/// Runs `argv` (argv[0] looked up in PATH) with stdin and stderr on /dev/null and returns its
/// stdout, whatever its exit status: a stack dumper's partial output is still worth showing.
/// Killed after `limit`: an Error saying so. Safe on any thread; the child may be reaped by
/// another thread's waitpid(-1) (ferryd's), which only costs the status nobody reads.
Result<std::string> run_capture_limited(const std::vector<std::string>& argv,
                                        std::chrono::milliseconds limit);

}  // namespace ferry
