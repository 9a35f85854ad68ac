#pragma once
/// \file
/// Starting a process (a rank, or ferryd for a local host): everything the child needs is
/// prepared before fork, so that between fork and exec only async-signal-safe calls run.
/// ferryd and the transport both start processes, so this lives in neither.

#include <sys/types.h>

#include <csignal>
#include <string>
#include <vector>

#include "ferry/binding/plan.hpp"
#include "ferry/common/result.hpp"

namespace ferry {

/// A fully prepared exec: argv/envp arrays own their strings.
struct SpawnRequest {
  std::string path;  ///< resolved executable (absolute, or relative to wdir)
  std::vector<std::string> argv;
  std::vector<std::string> env;  ///< final "K=V" list
  std::string wdir;              ///< "" = stay
  int stdin_fd = -1;             ///< fds the child gets as 0, 1, 2
  int stdout_fd = -1;
  int stderr_fd = -1;
  std::vector<int> keep_fds;             ///< extra fds inherited unchanged (e.g. PMI_FD)
  const RankBinding* binding = nullptr;  ///< cores/memory applied in the child; null = none
  /// The signal the child gets when the thread that started it ends (PR_SET_PDEATHSIG); 0 =
  /// none. A rank dies with ferryd; a local ferryd gets SIGTERM, so that it stops its ranks
  /// with the job's grace as when its stream to ferryrun ends.
  int parent_death_signal = SIGKILL;
};

/// Merges environments: later lists override earlier ones by variable name.
std::vector<std::string> merge_environment(const std::vector<std::vector<std::string>>& layers);

/// Puts directories first on path-list variables: each of `prepends` ("NAME=DIR") makes
/// NAME "DIR:<its value in env>", or "DIR" when env has no or an empty NAME (mpirun's
/// --prefix: "PATH=P/bin", "LD_LIBRARY_PATH=P/lib"). Applied in order, so a later DIR of the
/// same NAME comes first. Entries without '=' or with an empty name or DIR are skipped.
std::vector<std::string> prepend_paths(std::vector<std::string> env,
                                       const std::vector<std::string>& prepends);

/// Finds `command` as execvp would, using the PATH of `env` (falls back to the default
/// path). A name with a '/' is taken as is. Error: one line naming the command.
Result<std::string> resolve_command(const std::string& command, const std::vector<std::string>& env,
                                    const std::string& wdir);

/// Forks and execs. The child gets its own process group, the request's parent-death
/// signal (by default SIGKILL when ferryd dies), default signal dispositions and an empty
/// signal mask. Returns the pid, or why exec failed
/// (reported by the child through a close-on-exec pipe, so exec failures are not
/// mistaken for the program's own exit 127).
Result<pid_t> spawn_process(const SpawnRequest& req);

}  // namespace ferry
