#include "ferry/binding/id_list.hpp"

#include <algorithm>
#include <charconv>

namespace ferry {

namespace {

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Parses a non-negative decimal number filling all of `s`.
bool parse_id(std::string_view s, int& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && out >= 0;
}

}  // namespace

Result<std::vector<int>> parse_id_list(std::string_view text) {
  while (!text.empty() && is_blank(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_blank(text.back())) text.remove_suffix(1);
  std::vector<int> ids;
  if (text.empty()) return ids;
  const std::string quoted = "'" + std::string(text) + "'";
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view item = text.substr(start, comma - start);
    size_t dash = item.find('-');
    int lo = 0, hi = 0;
    if (dash == std::string_view::npos) {
      if (!parse_id(item, lo)) return make_error("bad id list " + quoted);
      hi = lo;
    } else if (!parse_id(item.substr(0, dash), lo) || !parse_id(item.substr(dash + 1), hi) ||
               hi < lo) {
      return make_error("bad id range '" + std::string(item) + "' in " + quoted);
    }
    if (hi - lo > (1 << 20)) return make_error("id range too large in " + quoted);
    for (int i = lo; i <= hi; ++i) ids.push_back(i);
    start = comma + 1;
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

std::string format_id_list(std::vector<int> ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::string out;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(ids[i]);
    if (j > i) out += "-" + std::to_string(ids[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace ferry
