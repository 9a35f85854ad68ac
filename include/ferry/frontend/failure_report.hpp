#pragma once
/// \file
/// The block ferryrun prints when a job fails: a rank's exit, its MPI_Abort, or a lost host. One
/// formatter for all three, framed by a rule as Open MPI frames its own reports (people and scripts
/// look for the rule).

#include <string>
#include <variant>

namespace ferry {

/// Where a failing rank ran.
struct RankWhere {
  int rank = 0;
  std::string host;  ///< the host's label (HostPlan::label)
  int local_rank = 0;
  int pid = 0;  ///< 0: it never started (not shown)
  /// A process MPI_Comm_spawn started: how it is named instead of "rank N"
  /// ("spawned process 1:0"); "" for a rank.
  std::string label{};
};

/// A rank exited non-zero, was killed, or failed as ferryd reported.
struct RankExitFailure {
  RankWhere where;
  int exit_code = 0;
  int signal = 0;               ///< != 0: killed by this signal
  std::string reason;           ///< ferryd's reason ("" none)
  bool others_aborted = false;  ///< other ranks exist and get SIGTERM, then SIGKILL
  double kill_grace_s = 0;      ///< the SIGTERM → SIGKILL delay they get
  std::string error_file;       ///< what it wrote to TORCHELASTIC_ERROR_FILE ("" none)
};

/// A rank called MPI_Abort (PMI abort).
struct PmiAbortFailure {
  RankWhere where;
  int exit_code = 0;
  std::string message;  ///< the rank's message ("" none)
};

/// A host's connection ended while it still had ranks.
struct HostLostFailure {
  std::string host;
  std::string why;
  int ranks_running = 0;
};

using JobFailure = std::variant<RankExitFailure, PmiAbortFailure, HostLostFailure>;

/// The report block for `failure`, every line starting with `program` where a line names the tool;
/// ends with a newline. `attempt` >= 0: the job may restart, and the block says which attempt
/// failed (what follows is said once the attempt is over).
std::string format_failure_report(const std::string& program, const JobFailure& failure,
                                  int attempt = -1);

/// "SIGSEGV (Segmentation fault)"; a number the system has no name for reads "signal 70 (...)".
std::string signal_name(int sig);

}  // namespace ferry
