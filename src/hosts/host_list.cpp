#include "ferry/hosts/host_list.hpp"

#include <climits>
#include <cstddef>
#include <string>
#include <unordered_map>

namespace ferry {
namespace {

// Slot counts are bounded when parsed, but many repeats could still add up past INT_MAX.
int saturating_add(int a, int b) { return a > INT_MAX - b ? INT_MAX : a + b; }

std::string identity(const HostEntry& host) {
  return host.name + '\0' + host.user + '\0' + std::to_string(host.port);
}

}  // namespace

void merge_hosts(HostList& into, const HostList& more) {
  // An index keeps merging a Slurm allocation of thousands of nodes linear.
  std::unordered_map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < into.size(); ++i) index.emplace(identity(into[i]), i);

  for (const HostEntry& host : more) {
    auto [it, added] = index.emplace(identity(host), into.size());
    if (added) {
      into.push_back(host);
      continue;
    }
    HostEntry& same = into[it->second];
    same.slots = saturating_add(same.slots, host.slots);
    // A part without a hard limit leaves the merged host without one.
    same.max_slots = (same.max_slots > 0 && host.max_slots > 0)
                         ? saturating_add(same.max_slots, host.max_slots)
                         : 0;
    if (!host.ferryd.empty()) same.ferryd = host.ferryd;
  }
}

}  // namespace ferry
