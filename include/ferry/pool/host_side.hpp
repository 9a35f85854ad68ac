#pragma once
/// \file
/// A host's side of a warm pool: `ferryd --pool`, started once per host by the pool process
/// over its SSH connection. It reads the pool's frames (mux.hpp) on its stdin and, for each
/// job the pool opens, has its fork server (fork_server.hpp) fork this host's ferryd on a
/// socketpair (ferryd_starter.hpp; without a fork server, it forks and execs `ferryd --stdio`),
/// then carries that ferryd's stdin, stdout and stderr as the job's stream. A job's ferryd is the
/// same program as any other: it stops its ranks when its stream ends (the pool closed it, or the
/// job's front end went away) and exits. When the pool's connection ends, every job's stream ends
/// with it, and each job's ferryd also gets SIGTERM when this process exits (through the fork
/// server's end).

#include <string>

namespace ferry {

/// Serves the pool on `in_fd`/`out_fd` until its stream ends; `ferryd_exe` is what the fork
/// server (and each job's ferryd, without one) is exec'd from (this ferryd's own file).
/// Returns the exit status (0: the pool ended its stream; 1: the stream was corrupt or an fd
/// failed).
int run_pool_host(int in_fd, int out_fd, const std::string& ferryd_exe);

}  // namespace ferry
