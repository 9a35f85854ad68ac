#include "ferry/frontend/restart_policy.hpp"

namespace ferry {

bool RestartPolicy::can_run(int hosts, int ranks, int all_hosts) const {
  if (hosts <= 0 || ranks <= 0) return false;
  if (hosts >= all_hosts) return true;
  if (!shrinks()) return false;
  return hosts >= limits_.min_hosts && ranks >= limits_.min_ranks;
}

Decision RestartPolicy::after(const AttemptEnd& end) {
  if (!end.failed || !enabled()) return {};
  if (end.interrupted) return {NextStep::kFinish, "interrupted"};
  if (end.rank_succeeded_first)
    return {NextStep::kFinish,
            "a rank had already finished successfully; a partly finished job is not restarted"};
  // A lost host with a floor to fall back on: go on without it, as torchrun does on a
  // membership change, without using up a restart.
  if (end.hosts_lost > 0 && shrinks() &&
      can_run(end.hosts_left, end.ranks_left, end.hosts_left + end.hosts_lost))
    return {NextStep::kShrink, ""};
  if (restarts_ < limits_.max_restarts) {
    ++restarts_;
    return {NextStep::kRestart, ""};
  }
  std::string why =
      "no restarts left (--max-restarts " + std::to_string(limits_.max_restarts) + ")";
  if (end.hosts_lost > 0 && shrinks())
    why += ", and " + std::to_string(end.hosts_left) + " host(s) with " +
           std::to_string(end.ranks_left) + " rank(s) are too few to go on";
  return {NextStep::kFinish, why};
}

}  // namespace ferry
