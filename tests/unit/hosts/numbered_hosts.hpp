#pragma once
// A host list for tests that need hosts but not their names: node1, node2, ... with the
// given slot counts.

#include <initializer_list>
#include <string>

#include "ferry/hosts/host_list.hpp"

namespace ferry {

inline HostList numbered_hosts(std::initializer_list<int> slots) {
  HostList list;
  int i = 0;
  for (int s : slots) {
    HostEntry h;
    h.name = "node" + std::to_string(++i);
    h.slots = s;
    list.push_back(h);
  }
  return list;
}

}  // namespace ferry
