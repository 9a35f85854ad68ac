#pragma once
/// \file
/// The `ferry` command: the user's view of the jobs ferryrun kept (--detach, --nohup):
///   ferry ps [--prune]                 the jobs, running and ended
///   ferry logs ID [-f] [--rank R]      a job's console, from its journal (and following it)
///   ferry attach ID [--since N|all]    the last N lines (default 100), then live; Ctrl-C
///                                      leaves the job running; --signal SIG signals it
///   ferry stop ID                      ends it as Ctrl-C would (SIGTERM, SIGKILL after grace)
///   ferry wait ID                      waits, and exits with the status ferryrun would have
/// An id may be given by its first characters. Bad input (an unknown id, stopping an ended
/// or stopping job, attaching to an ended one) is one line on stderr and exit status 2.

#include <string>
#include <vector>

namespace ferry {

/// Runs `ferry` with `args` (args[0] is the program) and returns its exit status.
int run_ferry_tool(const std::vector<std::string>& args);

}  // namespace ferry
