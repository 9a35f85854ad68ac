#pragma once
/// \file
/// Linux "cpulist" text ("0-3,8,10-11"): the format of taskset -c, /sys/.../local_cpulist,
/// cpuset.cpus and numactl. Used for CPU and NUMA node ids alike. hwloc's list functions do
/// the parsing and printing; parse_id_list() first holds the text to the strict form those
/// files use, as hwloc's own parser skips what it does not understand.

#include <string>
#include <string_view>
#include <vector>

#include "ferry/common/result.hpp"

namespace ferry {

/// The largest id parse_id_list() accepts: far above any CPU or NUMA node number Linux
/// gives (hwloc sizes its bitmaps by the largest id).
inline constexpr int kMaxListedId = (1 << 22) - 1;

/// Parses a list such as "0-3,8,10-11" (surrounding blanks and a trailing newline allowed;
/// "" is the empty list). Returns the ids ascending, without duplicates. Error: one line
/// quoting the text, for anything else: "bad id list '1,,2'" (an item that is not a decimal
/// number: empty, signed, hex, spaces inside), "bad id range '3-1' in '0,3-1'" (a range whose
/// ends are not numbers or run backwards), "id range too large in '0-9999999'" (a range of
/// more than 1,048,576 ids, or an id above kMaxListedId).
Result<std::vector<int>> parse_id_list(std::string_view text);

/// Formats ids compactly, ascending, ranges collapsed: {8,0,1,2,3} → "0-3,8"; {} → "".
/// Ids are OS indices, never negative: a negative one is left out.
std::string format_id_list(const std::vector<int>& ids);

}  // namespace ferry
