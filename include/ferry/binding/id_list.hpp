#pragma once
/// \file
/// Linux "cpulist" text ("0-3,8,10-11"): the format of taskset -c, /sys/.../local_cpulist,
/// cpuset.cpus and numactl. Used for CPU and NUMA node ids alike.

#include <string>
#include <string_view>
#include <vector>

#include "ferry/common/result.hpp"

namespace ferry {

/// Parses a list such as "0-3,8,10-11" (surrounding blanks and a trailing newline allowed;
/// "" is the empty list). Returns the ids ascending, without duplicates. Error: one line
/// quoting the text, for anything else (a negative id, "3-1", a stray character).
Result<std::vector<int>> parse_id_list(std::string_view text);

/// Formats ids compactly, ascending, ranges collapsed: {8,0,1,2,3} → "0-3,8"; {} → "".
std::string format_id_list(std::vector<int> ids);

}  // namespace ferry
