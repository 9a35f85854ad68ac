#include "ferry/plan/placement.hpp"

#include <algorithm>
#include <map>
#include <string>

namespace ferry {
namespace {

std::string too_many(int np, long total) {
  return "-np " + std::to_string(np) + " asks for more ranks than the " + std::to_string(total) +
         (total == 1 ? " slot" : " slots") +
         " of the hosts given; add hosts or slots, or pass --oversubscribe";
}

bool below_max(const HostEntry& h, int count) { return h.max_slots <= 0 || count < h.max_slots; }

// Round-robins `left` ranks over the hosts that may take one more (under their slots when
// `within_slots`, else under max_slots); returns the ranks that found no host.
int spread(const HostList& hosts, std::vector<int>& count, int left, bool within_slots) {
  bool progress = true;
  while (left > 0 && progress) {
    progress = false;
    for (size_t i = 0; i < hosts.size() && left > 0; ++i) {
      bool room = within_slots ? count[i] < hosts[i].slots : below_max(hosts[i], count[i]);
      if (!room) continue;
      ++count[i];
      --left;
      progress = true;
    }
  }
  return left;
}

// Ranks per host for -N / ppr:n:node.
Result<std::vector<int>> counts_per_host(const HostList& hosts, int& np, int per_host,
                                         bool oversubscribe) {
  const long capacity = static_cast<long>(per_host) * static_cast<long>(hosts.size());
  if (np <= 0) {
    if (capacity > 1'000'000'000)
      return make_error("-N " + std::to_string(per_host) + " over so many hosts is too many ranks");
    np = static_cast<int>(capacity);
  }
  if (np > capacity)
    return make_error("-np " + std::to_string(np) + " asks for more ranks than -N " +
                      std::to_string(per_host) + " on " + std::to_string(hosts.size()) +
                      " hosts allows (" + std::to_string(capacity) + ")");
  std::vector<int> count(hosts.size(), 0);
  int left = np;
  for (size_t i = 0; i < hosts.size() && left > 0; ++i) {
    count[i] = std::min(left, per_host);
    left -= count[i];
    const HostEntry& h = hosts[i];
    if (h.max_slots > 0 && count[i] > h.max_slots)
      return make_error("-N " + std::to_string(per_host) + " puts " + std::to_string(count[i]) +
                        " ranks on " + h.name +
                        ", past its max_slots=" + std::to_string(h.max_slots));
    if (count[i] > h.slots && !oversubscribe)
      return make_error("-N " + std::to_string(per_host) + " puts " + std::to_string(count[i]) +
                        " ranks on " + h.name + ", which has " + std::to_string(h.slots) +
                        " slots; give it more slots or pass --oversubscribe");
  }
  return count;
}

// Ranks per host for fill-by-slot and round-robin mapping.
Result<std::vector<int>> counts_by_mapping(const HostList& hosts, int& np, HostMapping mapping,
                                           bool oversubscribe) {
  long total = 0;
  for (const auto& h : hosts) total += h.slots;
  if (np <= 0) np = static_cast<int>(std::min<long>(total, 1'000'000'000));
  if (np <= 0) return make_error("the hosts offer no slots");

  std::vector<int> count(hosts.size(), 0);
  int left = np;
  if (mapping == HostMapping::kByNode) {
    left = spread(hosts, count, left, true);
  } else {
    for (size_t i = 0; i < hosts.size() && left > 0; ++i) {
      count[i] = std::min(left, hosts[i].slots);
      left -= count[i];
    }
  }
  if (left > 0) {
    if (!oversubscribe) return make_error(too_many(np, total));
    if (spread(hosts, count, left, false) > 0)
      return make_error("-np " + std::to_string(np) +
                        " exceeds the max_slots of every host, even with --oversubscribe");
  }
  return count;
}

}  // namespace

Result<Placement> place_ranks(const HostList& hosts, int np, bool oversubscribe,
                              const PlacementPolicy& policy) {
  if (hosts.empty()) return make_error("no hosts to run on");
  auto counted = policy.per_host > 0 ? counts_per_host(hosts, np, policy.per_host, oversubscribe)
                                     : counts_by_mapping(hosts, np, policy.mapping, oversubscribe);
  if (!counted) return counted.error();
  const std::vector<int>& count = *counted;

  Placement p;
  p.world_size = np;
  std::vector<size_t> host_of;  // index in hosts → index in p.hosts
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (count[i] == 0) continue;
    HostPlan hp;
    hp.host = hosts[i];
    hp.node_rank = static_cast<int>(p.hosts.size());
    if (count[i] > hosts[i].slots) p.oversubscribed = true;
    host_of.push_back(i);
    p.hosts.push_back(std::move(hp));
  }

  RankOrder order = policy.order;
  if (order == RankOrder::kFollowMapping)
    order = policy.per_host == 0 && policy.mapping == HostMapping::kByNode ? RankOrder::kByNode
                                                                           : RankOrder::kBySlot;
  auto add_rank = [](HostPlan& hp, int rank) {
    RankSlot r;
    r.rank = rank;
    r.local_rank = static_cast<int>(hp.ranks.size());
    r.node_rank = hp.node_rank;
    hp.ranks.push_back(r);
  };
  int rank = 0;
  if (order == RankOrder::kBySlot) {
    for (size_t k = 0; k < p.hosts.size(); ++k)
      for (int l = 0; l < count[host_of[k]]; ++l) add_rank(p.hosts[k], rank++);
  } else {
    int most = *std::max_element(count.begin(), count.end());
    for (int l = 0; l < most; ++l)
      for (size_t k = 0; k < p.hosts.size(); ++k)
        if (count[host_of[k]] > l) add_rank(p.hosts[k], rank++);
  }
  finish_placement(p);
  return p;
}

void finish_placement(Placement& p) {
  for (auto& hp : p.hosts)
    for (auto& r : hp.ranks) r.local_size = static_cast<int>(hp.ranks.size());

  std::map<std::string, int> name_count;
  for (auto& hp : p.hosts) ++name_count[hp.host.name];
  for (auto& hp : p.hosts) {
    hp.label = hp.host.name;
    if (name_count[hp.host.name] > 1) {
      // Port 0 (ssh config's or the default) stays unnamed rather than ":0".
      if (hp.host.port > 0) hp.label += ":" + std::to_string(hp.host.port);
      if (!hp.host.user.empty()) hp.label = hp.host.user + "@" + hp.label;
    }
  }
  // cross_rank: index of the host among the hosts that have this local_rank.
  std::map<int, int> cross_size;
  for (auto& hp : p.hosts)
    for (auto& r : hp.ranks) r.cross_rank = cross_size[r.local_rank]++;
  for (auto& hp : p.hosts)
    for (auto& r : hp.ranks) r.cross_size = cross_size[r.local_rank];
}

int universe_size(const Placement& p) {
  int slots = 0;
  for (const HostPlan& h : p.hosts)
    if (!h.ranks.empty()) slots += std::max(h.host.slots, 0);
  return std::max(slots, p.world_size);
}

}  // namespace ferry
