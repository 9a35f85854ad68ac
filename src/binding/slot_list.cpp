// Rank-file slot lists: parsed once on the front end, resolved against each host's sockets
// there (to refuse a bad file before any rank starts) and again by ferryd to bind.
#include "ferry/binding/slot_list.hpp"

#include <charconv>
#include <set>

#include "ferry/binding/topology.hpp"
#include "ferry/common/text.hpp"

namespace ferry {

namespace {

// The most cores or sockets a slot list may name: far above any host.
constexpr int kMaxSlotIndex = 1 << 20;

bool parse_index(std::string_view s, int& out) {
  if (s.empty() || s.size() > 7) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  std::from_chars(s.data(), s.data() + s.size(), out);
  return out <= kMaxSlotIndex;
}

// "3" or "1-4" into item.first/last.
bool parse_range(std::string_view s, SlotItem& item) {
  const size_t dash = s.find('-');
  if (dash == std::string_view::npos) {
    if (!parse_index(s, item.first)) return false;
    item.last = item.first;
    return true;
  }
  return parse_index(s.substr(0, dash), item.first) && parse_index(s.substr(dash + 1), item.last) &&
         item.first <= item.last;
}

std::string range_text(int n) { return n == 1 ? "0" : "0-" + std::to_string(n - 1); }

}  // namespace

Result<std::vector<SlotItem>> parse_slot_list(const std::string& text) {
  auto bad = [&] { return make_error("bad slot list '" + text + "'"); };
  std::vector<SlotItem> items;
  for (const std::string& group : split(text, ';')) {
    int socket = -1;  // a ',' after "S:..." goes on with socket S
    for (const std::string& word : split(group, ',')) {
      std::string_view w = word;
      SlotItem item;
      if (const size_t colon = w.find(':'); colon != std::string_view::npos) {
        if (!parse_index(w.substr(0, colon), socket)) return bad();
        w = w.substr(colon + 1);
      }
      item.socket = socket;
      if (w == "*" && socket >= 0)
        item.all = true;
      else if (!parse_range(w, item))
        return bad();
      items.push_back(item);
    }
  }
  if (items.empty()) return bad();
  return items;
}

Result<std::vector<int>> resolve_slot_list(const std::vector<SlotItem>& items,
                                           const std::vector<int>& socket_cores) {
  std::vector<int> start;  // the host-wide index of each socket's first core
  int total = 0;
  for (int n : socket_cores) {
    start.push_back(total);
    total += n;
  }
  const int sockets = static_cast<int>(socket_cores.size());
  std::set<int> cores;
  for (const SlotItem& item : items) {
    if (item.socket < 0) {
      if (item.last >= total)
        return make_error("core " + std::to_string(item.last) + " does not exist (the host has " +
                          std::to_string(total) + ": " + range_text(total) + ")");
      for (int c = item.first; c <= item.last; ++c) cores.insert(c);
      continue;
    }
    if (item.socket >= sockets)
      return make_error("socket " + std::to_string(item.socket) + " does not exist (the host has " +
                        std::to_string(sockets) + ": " + range_text(sockets) + ")");
    const int n = socket_cores[static_cast<size_t>(item.socket)];
    const int last = item.all ? n - 1 : item.last;
    if (last >= n)
      return make_error("core " + std::to_string(last) + " of socket " +
                        std::to_string(item.socket) + " does not exist (it has " +
                        std::to_string(n) + ": " + range_text(n) + ")");
    for (int c = item.all ? 0 : item.first; c <= last; ++c)
      cores.insert(start[static_cast<size_t>(item.socket)] + c);
  }
  return std::vector<int>(cores.begin(), cores.end());
}

Result<std::vector<int>> slot_list_cores(const std::string& text,
                                         const std::vector<int>& socket_cores) {
  auto items = parse_slot_list(text);
  if (!items) return items.error();
  return resolve_slot_list(*items, socket_cores);
}

std::vector<int> socket_core_counts(const Topology& topology) {
  std::vector<int> counts;
  int current = -1;
  for (const CoreInfo& core : topology.cores()) {
    if (counts.empty() || core.package != current) counts.push_back(0);
    current = core.package;
    ++counts.back();
  }
  return counts;
}

}  // namespace ferry
