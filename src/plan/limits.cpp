#include "ferry/plan/limits.hpp"

namespace ferry {

Status check_job_size(const Placement& placement) {
  if (placement.world_size > kMaxRanks)
    return make_error(std::to_string(placement.world_size) + " ranks: a job has at most " +
                      std::to_string(kMaxRanks));
  for (const auto& h : placement.hosts)
    if (h.ranks.size() > static_cast<size_t>(kMaxRanksPerHost))
      return make_error(std::to_string(h.ranks.size()) + " ranks on host " + h.label +
                        ": a host has at most " + std::to_string(kMaxRanksPerHost));
  return {};
}

}  // namespace ferry
