#pragma once
/// \file
/// Rank lists as users write them (--console-ranks, the job file's console_ranks).

#include <string>
#include <vector>

#include "ferry/common/result.hpp"

namespace ferry {

/// "0,3-5,8" as ranks, in the order written; an error names the bad part ("'3-' is not a
/// rank or a range such as 0,4-7").
Result<std::vector<int>> parse_rank_list(const std::string& text);

}  // namespace ferry
