#include "ferry/binding/id_list.hpp"

#include <charconv>
#include <new>

#include "ferry/binding/hwloc_handles.hpp"
#include "ferry/common/text.hpp"

namespace ferry {

namespace {

// Widest range accepted: a list in a file names CPUs, not a billion of anything.
constexpr int kMaxRangeWidth = 1 << 20;

// A decimal id filling all of `s`: digits only (no sign, no blanks, no "0x").
bool parse_id(std::string_view s, int& out) {
  if (s.empty() || s.front() < '0' || s.front() > '9') return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

// Checks `text` (trimmed, not empty) against the strict cpulist form and writes it out again
// for hwloc_bitmap_list_sscanf, whose parser is lenient where ferry must not be: it skips
// unknown characters, reads "0x3" as hex and "010" as octal, and takes "4-" as every id from
// 4 on. The numbers go out in plain decimal, so hwloc reads exactly what was checked.
Result<std::string> strict_list(std::string_view text) {
  const std::string quoted = "'" + std::string(text) + "'";
  std::string plain;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view item = text.substr(start, comma - start);
    const size_t dash = item.find('-');
    int lo = 0, hi = 0;
    if (dash == std::string_view::npos) {
      if (!parse_id(item, lo)) return make_error("bad id list " + quoted);
      hi = lo;
    } else if (!parse_id(item.substr(0, dash), lo) || !parse_id(item.substr(dash + 1), hi) ||
               hi < lo) {
      return make_error("bad id range '" + std::string(item) + "' in " + quoted);
    }
    if (hi - lo > kMaxRangeWidth || hi > kMaxListedId)
      return make_error("id range too large in " + quoted);
    if (!plain.empty()) plain += ',';
    plain += std::to_string(lo);
    if (hi > lo) plain += "-" + std::to_string(hi);
    start = comma + 1;
  }
  return plain;
}

}  // namespace

Result<std::vector<int>> parse_id_list(std::string_view text) {
  text = trim(text);
  std::vector<int> ids;
  if (text.empty()) return ids;
  auto plain = strict_list(text);
  if (!plain) return plain.error();
  HwlocBitmapPtr set = new_hwloc_bitmap();
  if (!set || hwloc_bitmap_list_sscanf(set.get(), plain->c_str()) != 0)
    return make_error("hwloc: out of memory reading id list '" + std::string(text) + "'");
  ids.reserve(static_cast<size_t>(hwloc_bitmap_weight(set.get())));
  for (int id = hwloc_bitmap_first(set.get()); id >= 0; id = hwloc_bitmap_next(set.get(), id))
    ids.push_back(id);
  return ids;
}

std::string format_id_list(const std::vector<int>& ids) {
  HwlocBitmapPtr set = new_hwloc_bitmap();
  if (!set) throw std::bad_alloc();
  for (int id : ids)
    if (id >= 0 && hwloc_bitmap_set(set.get(), static_cast<unsigned>(id)) != 0)
      throw std::bad_alloc();
  char* raw = nullptr;
  if (hwloc_bitmap_list_asprintf(&raw, set.get()) < 0) throw std::bad_alloc();
  const HwlocStringPtr text(raw);
  return text.get();
}

}  // namespace ferry
