#include "ferry/frontend/job_end.hpp"

namespace ferry {

bool JobEnd::interrupted(int sig) {
  if (user_signal_) return false;
  user_signal_ = sig;
  return true;
}

bool JobEnd::rank_ended(int exit_code, int signal, bool reported) {
  const bool failed = signal != 0 || exit_code != 0 || reported;
  if (!failed || aborting_) return false;
  if (user_signal_ && signal == user_signal_) return false;
  return rank_aborted(signal ? 128 + signal : (exit_code ? exit_code : 1));
}

bool JobEnd::rank_aborted(int exit_code) {
  if (aborting_) return false;
  rank_failed_ = true;
  failure_status_ = exit_code;
  aborting_ = true;
  return true;
}

bool JobEnd::host_lost(int ranks_running) {
  if (ranks_running <= 0 || aborting_ || user_signal_) return false;
  host_lost_ = true;
  aborting_ = true;
  return true;
}

bool JobEnd::timed_out() {
  if (aborting_ || user_signal_) return false;
  timed_out_ = true;
  aborting_ = true;
  return true;
}

int JobEnd::exit_status() const {
  if (refused_) return 2;
  if (start_failed_) return user_signal_ ? 128 + user_signal_ : 1;
  if (rank_failed_) return failure_status_;
  if (host_lost_) return 255;
  if (timed_out_) return kTimeoutExitStatus;
  if (user_signal_) return 128 + user_signal_;
  return 0;
}

}  // namespace ferry
