#pragma once
/// \file
/// How a job ends: which event is the job's failure, and ferryrun's exit status. The first failure
/// (a rank's exit or MPI_Abort, a lost host) decides; what happens after it is the abort it
/// started, and ranks killed by the signal the user sent are the user's doing.

namespace ferry {

/// ferryrun's exit status when --timeout ended the job (as timeout(1)'s).
inline constexpr int kTimeoutExitStatus = 124;

class JobEnd {
 public:
  /// Some host could not start: nothing ran. Exit status 1 (128+signal when interrupted).
  void start_failed() { start_failed_ = true; }
  /// What the user gave cannot run on the hosts as they are (a rank file's cores a host lacks),
  /// found once they answered: nothing ran. Exit status 2, as for any bad input.
  void refused() { refused_ = true; }
  /// Every host was told to end its ranks: rank ends from now on are not failures.
  void abort_started() { aborting_ = true; }
  bool aborting() const { return aborting_; }
  /// ferryrun got `sig`, which went to every rank. Returns false when a signal came before (the
  /// caller then kills every rank at once).
  bool interrupted(int sig);
  /// 0 until ferryrun got a signal.
  int user_signal() const { return user_signal_; }
  /// Whether a rank failed or a host was lost (the job's failure, not the user's signal).
  bool failed() const { return rank_failed_ || host_lost_; }

  /// A rank ended: exit code, or killed by `signal` (!= 0); `reported`: ferryd reported a failure
  /// of it (it fails even with exit code 0). True when this is the job's failure: ferryrun will
  /// exit with its status (128+signal, else its code, else 1), and the job is now aborting (the
  /// caller tells every host).
  bool rank_ended(int exit_code, int signal, bool reported);
  /// A rank called MPI_Abort with `exit_code`: as a failing rank, with that status.
  bool rank_aborted(int exit_code);
  /// A host's link ended with `ranks_running` ranks still running. True when this is the job's
  /// failure (exit status 255; the job is now aborting).
  bool host_lost(int ranks_running);

  /// --timeout expired. True when nothing ended the job before: ferryrun will exit with
  /// kTimeoutExitStatus, and the job is now aborting (the caller tells every host).
  bool timed_out();
  bool timed_out_already() const { return timed_out_; }

  /// 0, the first failure's status, 255 for a lost host, kTimeoutExitStatus after --timeout,
  /// 128+signal when interrupted, 1 when the job did not start, 2 when it was refused.
  int exit_status() const;

 private:
  bool start_failed_ = false;
  bool refused_ = false;
  bool aborting_ = false;
  bool rank_failed_ = false;  // a rank failed first: its status is ferryrun's
  int failure_status_ = 0;
  bool host_lost_ = false;
  bool timed_out_ = false;
  int user_signal_ = 0;
};

}  // namespace ferry
