#pragma once
/// \file
/// ferryd: serves one host's part of a job over a byte stream (its stdin/stdout), forks
/// the ranks, streams their output back, reports their exits and leaves nothing behind.

#include <asio.hpp>
#include <memory>

#include "ferry/common/settings.hpp"

namespace ferry {

class ProcessSpawner;

/// Where ferryd talks to the front end, and how it starts ranks.
struct DaemonOptions {
  int in_fd = 0;   ///< frames from ferryrun; EOF means ferryrun is gone: kill everything
  int out_fd = 1;  ///< frames to ferryrun
  /// Starts, signals and reaps the ranks; must outlive the Daemon. Null: the system's
  /// (fork/exec, kill, waitpid), which is what ferryd uses; tests pass a fake.
  ProcessSpawner* spawner = nullptr;
  /// Become the subreaper of everything the ranks start (PR_SET_CHILD_SUBREAPER), so that
  /// the sweep at the job's end finds every descendant, tagged or not, through /proc's parent
  /// links; where the kernel refuses, the job tag and process groups alone. ferryd sets it;
  /// a test process must not (the sweep would kill all its other children).
  bool subreaper = false;
  /// The FERRY_* settings ferryd read at its start (output copying, the test hooks' roots).
  Settings settings;
};

/// One host's daemon. Create, `start()`, run the io_context; it stops the io_context when
/// the job is over on this host (every rank reaped and reported, or the front end gone).
/// The Daemon owns `in_fd` and `out_fd` and closes them.
class Daemon {
 public:
  Daemon(asio::io_context& io, const DaemonOptions& opts);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  /// Sends Hello and begins serving.
  void start();
  /// ferryd's exit status once the io_context stopped: 0 after a served job, non-zero when
  /// the front end vanished, a signal ended it, or the protocol broke.
  int exit_code() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ferry
