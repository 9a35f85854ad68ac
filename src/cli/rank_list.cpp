// Rank lists as users write them: --console-ranks and the job file's console_ranks.
#include "ferry/cli/rank_list.hpp"

#include <algorithm>
#include <charconv>
#include <string_view>

namespace ferry {
namespace {

// A whole non-negative number, all of `text`.
bool whole(std::string_view text, int& out) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() && out >= 0;
}

}  // namespace

Result<std::vector<int>> parse_rank_list(const std::string& text) {
  std::vector<int> out;
  for (size_t i = 0; i <= text.size();) {
    const size_t j = std::min(text.find(',', i), text.size());
    const std::string_view part = std::string_view(text).substr(i, j - i);
    i = j + 1;
    const size_t dash = part.find('-');
    int lo = 0;
    int hi = 0;
    const bool ok = dash == std::string_view::npos
                        ? whole(part, lo) && whole(part, hi)
                        : whole(part.substr(0, dash), lo) && whole(part.substr(dash + 1), hi);
    if (!ok || hi < lo)
      return make_error("'" + std::string(part) + "' is not a rank or a range such as 0,4-7");
    if (hi - lo > 1'000'000) return make_error("'" + std::string(part) + "' is too large a range");
    for (int r = lo; r <= hi; ++r) out.push_back(r);
  }
  return out;
}

}  // namespace ferry
