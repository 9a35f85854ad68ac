#pragma once
/// \file
/// Whether a job goes on after an attempt ended, and how: the same hosts again (a restart,
/// counted against --max-restarts), the hosts that are left (a lost host with --min-hosts:
/// not counted, as torchrun's membership change), or not at all. Pure: the job asks it at
/// each attempt's end.

#include <string>

namespace ferry {

/// The limits the user set.
struct RestartLimits {
  int max_restarts = 0;  ///< --max-restarts: counted restarts allowed
  int min_hosts = 0;     ///< --min-hosts: fewest hosts an attempt may run on; 0 = all of them
  int min_ranks = 0;     ///< horovodrun --min-np: fewest ranks an attempt may run; 0 = no floor
};

/// How one attempt ended, as far as the policy cares.
struct AttemptEnd {
  bool failed = false;                ///< a rank failed, or a host was lost
  bool interrupted = false;           ///< ferryrun got SIGINT/SIGTERM/SIGHUP
  bool rank_succeeded_first = false;  ///< a rank had exited 0 before the failure
  int hosts_lost = 0;                 ///< hosts lost during the attempt
  int hosts_left = 0;                 ///< hosts of the attempt that were not lost
  int ranks_left = 0;                 ///< the ranks those hosts ran
};

enum class NextStep {
  kFinish,   ///< the job is over; its status is this attempt's
  kRestart,  ///< run again on every host that answers (counted)
  kShrink,   ///< run again on the hosts that are left (not counted)
};

struct Decision {
  NextStep step = NextStep::kFinish;
  std::string why;  ///< for kFinish after a failure: why there is no next attempt ("" else)
};

class RestartPolicy {
 public:
  explicit RestartPolicy(RestartLimits limits) : limits_(limits) {}

  /// Whether the job may run more than one attempt at all.
  bool enabled() const { return limits_.max_restarts > 0 || shrinks(); }
  /// Whether an attempt may run on fewer hosts than the job has.
  bool shrinks() const { return limits_.min_hosts > 0 || limits_.min_ranks > 0; }
  /// What follows the attempt that ended as `end`. A kRestart uses up one restart.
  Decision after(const AttemptEnd& end);
  /// Whether an attempt may run on `hosts` hosts with `ranks` ranks, when the job has
  /// `all_hosts` (after a restart, when a lost host did not come back).
  bool can_run(int hosts, int ranks, int all_hosts) const;
  /// Counted restarts so far (TORCHELASTIC_RESTART_COUNT of the next attempt).
  int restarts() const { return restarts_; }
  const RestartLimits& limits() const { return limits_; }

 private:
  RestartLimits limits_;
  int restarts_ = 0;
};

}  // namespace ferry
