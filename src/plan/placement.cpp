#include "ferry/plan/placement.hpp"

#include <map>
#include <string>

namespace ferry {

Result<Placement> place_ranks(const HostList& hosts, int np, bool oversubscribe) {
  if (hosts.empty()) return make_error("no hosts to run on");
  long total = 0;
  for (const auto& h : hosts) total += h.slots;
  if (np <= 0) np = static_cast<int>(total);
  if (np <= 0) return make_error("the hosts offer no slots");

  std::vector<int> count(hosts.size(), 0);
  int left = np;
  for (size_t i = 0; i < hosts.size() && left > 0; ++i) {
    count[i] = std::min(left, hosts[i].slots);
    left -= count[i];
  }
  if (left > 0) {
    if (!oversubscribe)
      return make_error("-np " + std::to_string(np) + " asks for more ranks than the " +
                        std::to_string(total) +
                        " slots of the hosts given; add hosts or slots, or pass "
                        "--oversubscribe");
    // Round-robin the extra ranks over hosts that may still take one.
    bool progress = true;
    while (left > 0 && progress) {
      progress = false;
      for (size_t i = 0; i < hosts.size() && left > 0; ++i) {
        if (hosts[i].max_slots > 0 && count[i] >= hosts[i].max_slots) continue;
        ++count[i];
        --left;
        progress = true;
      }
    }
    if (left > 0)
      return make_error("-np " + std::to_string(np) +
                        " exceeds the max_slots of every host, even with --oversubscribe");
  }

  Placement p;
  p.world_size = np;
  int rank = 0;
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (count[i] == 0) continue;
    HostPlan hp;
    hp.host = hosts[i];
    hp.node_rank = static_cast<int>(p.hosts.size());
    if (count[i] > hosts[i].slots) p.oversubscribed = true;
    for (int l = 0; l < count[i]; ++l) {
      RankSlot r;
      r.rank = rank++;
      r.local_rank = l;
      r.local_size = count[i];
      r.node_rank = hp.node_rank;
      hp.ranks.push_back(r);
    }
    p.hosts.push_back(std::move(hp));
  }
  std::map<std::string, int> name_count;
  for (auto& hp : p.hosts) ++name_count[hp.host.name];
  for (auto& hp : p.hosts) {
    hp.label = hp.host.name;
    if (name_count[hp.host.name] > 1) {
      hp.label += ":" + std::to_string(hp.host.port);
      if (!hp.host.user.empty()) hp.label = hp.host.user + "@" + hp.label;
    }
  }
  // cross_rank: index of the host among the hosts that have this local_rank.
  std::map<int, int> cross_size;
  for (auto& hp : p.hosts)
    for (auto& r : hp.ranks) r.cross_rank = cross_size[r.local_rank]++;
  for (auto& hp : p.hosts)
    for (auto& r : hp.ranks) r.cross_size = cross_size[r.local_rank];
  return p;
}

}  // namespace ferry
