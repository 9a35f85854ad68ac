// What follows a failure outside horovodrun's elastic mode: an attempt runs to its end, then the
// job ends, or runs again over the same connections (the hosts whose connection ended are opened
// again first), or goes on without a lost host on the hosts that are left (RestartPolicy decides
// from --max-restarts, --min-hosts and --min-ranks; without them every failure ends the job).
#include "job_follow_up.hpp"

namespace ferry {

void Job::Impl::RestartAttempts::announce() {
  if (!policy_.enabled()) return;
  const JobOptions& o = job_.opts_;
  job_.diag_.verbose("restarts: at most " + std::to_string(o.max_restarts) +
                     (policy_.shrinks() ? "; a lost host leaves the job on at least " +
                                              std::to_string(std::max(o.min_hosts, 1)) + " host(s)"
                                        : "; every host is needed"));
}

void Job::Impl::RestartAttempts::after_attempt() {
  const Attempt& a = job_.attempt_;
  AttemptEnd ae;
  ae.failed = a.end.failed();
  ae.interrupted = a.end.user_signal() != 0;
  ae.rank_succeeded_first = a.rank_succeeded;
  std::string lost_names;
  std::vector<size_t> left = job_.survivors(lost_names);
  ae.hosts_left = static_cast<int>(left.size());
  ae.hosts_lost = static_cast<int>(a.members.size() - left.size());
  for (size_t m : left) ae.ranks_left += static_cast<int>(job_.full_.hosts[m].ranks.size());
  const Decision d = policy_.after(ae);
  if (d.step != NextStep::kFinish && job_.stdin_) job_.stdin_->stop();  // stdin: the first only
  switch (d.step) {
    case NextStep::kFinish:
      if (!d.why.empty()) job_.diag_.error("not restarting: " + d.why);
      return job_.finish_job();
    case NextStep::kShrink:
      return job_.launch_attempt(std::move(left), "continuing without " + lost_names);
    case NextStep::kRestart:
      job_.phase_ = Phase::kBetween;
      return job_.reopen_lost_hosts();
  }
}

bool Job::Impl::RestartAttempts::may_restart(int hosts, int ranks, int all_hosts) {
  return policy_.can_run(hosts, ranks, all_hosts);
}

std::string Job::Impl::RestartAttempts::restart_text() const {
  return "restarting (" + std::to_string(policy_.restarts()) + " of " +
         std::to_string(job_.opts_.max_restarts) + ")";
}

}  // namespace ferry
