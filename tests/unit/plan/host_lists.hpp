#pragma once
/// \file
/// Host lists for the placement tests: names and slots, nothing else set.

#include <initializer_list>
#include <utility>

#include "ferry/hosts/host_list.hpp"

namespace ferry::testing_plan {

inline HostList hosts(std::initializer_list<std::pair<const char*, int>> l) {
  HostList out;
  for (const auto& [n, s] : l) {
    HostEntry h;
    h.name = n;
    h.slots = s;
    out.push_back(h);
  }
  return out;
}

}  // namespace ferry::testing_plan
