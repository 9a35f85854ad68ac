#include "ferry/dynproc/group_ops.hpp"

#include <algorithm>

namespace ferry {

GroupOps::GroupOps(HostsOf hosts_of) : hosts_of_(std::move(hosts_of)) {}

Result<std::optional<GroupOps::Done>> GroupOps::arrive(int host, uint32_t id, Kind kind,
                                                       std::vector<ProcId> procs,
                                                       std::string data) {
  if (procs.empty()) return make_error("a PMIx group operation over no processes");
  std::sort(procs.begin(), procs.end());
  procs.erase(std::unique(procs.begin(), procs.end()), procs.end());
  std::vector<int> hosts;
  for (const auto& p : procs) {
    auto h = hosts_of_(p);
    if (h.empty())
      return make_error("a PMIx group operation names process " + p.nspace + ":" +
                        (p.rank == kWildcardRank ? std::string("*") : std::to_string(p.rank)) +
                        ", which the job does not have");
    hosts.insert(hosts.end(), h.begin(), h.end());
  }
  std::sort(hosts.begin(), hosts.end());
  hosts.erase(std::unique(hosts.begin(), hosts.end()), hosts.end());
  if (!std::binary_search(hosts.begin(), hosts.end(), host))
    return make_error("host " + std::to_string(host) +
                      " reported a PMIx group operation over processes it does not hold");
  auto& rounds = rounds_[{kind, procs}];
  auto round = std::find_if(rounds.begin(), rounds.end(),
                            [&](const Round& r) { return !r.arrived.contains(host); });
  if (round == rounds.end()) {
    rounds.push_back(Round{hosts, {}, {}, next_order_++});
    round = std::prev(rounds.end());
  }
  round->arrived[host] = Arrival{host, id};
  round->data[host] = std::move(data);
  if (round != rounds.begin() || round->arrived.size() < round->participants.size())
    return std::optional<Done>{};
  Done done;
  for (const auto& [h, a] : round->arrived) {
    done.hosts.push_back(a);
    done.data += round->data[h];
  }
  rounds.erase(rounds.begin());
  if (rounds.empty()) rounds_.erase({kind, procs});
  return std::optional<Done>{std::move(done)};
}

std::vector<GroupOps::Done> GroupOps::host_lost(int host) {
  std::vector<Done> out;
  for (auto it = rounds_.begin(); it != rounds_.end();) {
    auto& rounds = it->second;
    for (auto r = rounds.begin(); r != rounds.end();) {
      if (!std::binary_search(r->participants.begin(), r->participants.end(), host)) {
        ++r;
        continue;
      }
      Done d;
      d.status = kPmixErrUnreach;
      for (const auto& [h, a] : r->arrived)
        if (h != host) d.hosts.push_back(a);
      out.push_back(std::move(d));
      r = rounds.erase(r);
    }
    it = rounds.empty() ? rounds_.erase(it) : std::next(it);
  }
  return out;
}

std::vector<int> GroupOps::missing_hosts() const {
  const Round* oldest = nullptr;
  for (const auto& [key, rounds] : rounds_)
    for (const auto& r : rounds)
      if (!oldest || r.order < oldest->order) oldest = &r;
  std::vector<int> out;
  if (!oldest) return out;
  for (int h : oldest->participants)
    if (!oldest->arrived.contains(h)) out.push_back(h);
  return out;
}

std::size_t GroupOps::pending() const {
  std::size_t n = 0;
  for (const auto& [key, rounds] : rounds_) n += rounds.size();
  return n;
}

}  // namespace ferry
