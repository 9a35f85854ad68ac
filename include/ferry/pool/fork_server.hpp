#pragma once
/// \file
/// A warm pool's fork server on a host: `ferryd --fork-server`, started once by the host's
/// `ferryd --pool`, prepares what every job's ferryd would load the same way (the CPU
/// topology) and then forks the jobs' ferryds on request. A forked ferryd skips what an
/// exec'd one pays at every start (the exec, dynamic linking, the page faults of a fresh
/// image, hwloc's discovery) and is otherwise the same program, serving its one job on the
/// stream it was given.
///
/// The control socket is a SOCK_SEQPACKET pair: a request is one message carrying two fds (the
/// job's stream, the stderr pipe's write end); the answers come back in order, each as one
/// message: "forked PID", "failed WHY", and "exited PID STATUS" when a forked ferryd ends
/// (STATUS as waitpid gives it). The forked ferryds are the fork server's children: each gets
/// SIGTERM when the fork server dies, and the fork server gets SIGKILL when `ferryd --pool`
/// does, so a lost pool connection ends every job's ferryd as before.

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>

#include "ferry/common/result.hpp"

namespace ferry {

/// What the fork server runs: `prepare` once before serving, `serve` in each forked child
/// (one job's ferryd on `in_fd`/`out_fd`; its return value is the child's exit status).
struct ForkServerHooks {
  std::function<void()> prepare;
  std::function<int(int in_fd, int out_fd)> serve;
};

/// Serves requests on `control` until it ends (returns 0) or fails (returns 1). `argv` is the
/// process's own: each child rewrites its first argument to read `--stdio`, so that `ps`
/// shows a job's ferryd as such (the fork server is exec'd with `--fork-server`, which has room
/// for it).
int run_fork_server(int control, const ForkServerHooks& hooks, char** argv);

/// One thing the fork server said.
struct ForkServerEvent {
  enum class Kind { kForked, kFailed, kExited };
  Kind kind = Kind::kFailed;
  pid_t pid = -1;
  int status = 0;     ///< kExited: as waitpid gives it
  std::string error;  ///< kFailed: why there is no ferryd
};

/// Asks for one ferryd whose stdin and stdout are `stream` and whose stderr is `err` (both are
/// sent; the caller still closes its own). Error: the request could not be sent (the fork
/// server is gone or its socket is full).
Status request_fork(int control, int stream, int err);

/// The next event on `control`, which must be non-blocking: nullopt when none waits. Error: the
/// fork server is gone (end of stream) or said something unreadable.
Result<std::optional<ForkServerEvent>> read_fork_server_event(int control);

/// Parses one answer ("forked 12", "failed why", "exited 12 256"). Error: not one of those.
Result<ForkServerEvent> parse_fork_server_event(const std::string& message);

}  // namespace ferry
