#include "ferry/monitor/output_tail.hpp"

namespace ferry {

void OutputTail::append(int rank, std::string_view bytes) {
  Tail& t = ranks_[rank];
  while (!bytes.empty()) {
    const size_t nl = bytes.find('\n');
    const std::string_view piece = bytes.substr(0, nl);
    if (t.partial.size() < kLineBytes)
      t.partial.append(piece.substr(0, kLineBytes - t.partial.size()));
    if (nl == std::string_view::npos) return;
    if (!t.partial.empty() && t.partial.back() == '\r') t.partial.pop_back();
    t.lines.push_back(std::move(t.partial));
    t.partial.clear();
    if (t.lines.size() > kLines) t.lines.pop_front();
    bytes.remove_prefix(nl + 1);
  }
}

std::string OutputTail::last_line(int rank) const {
  auto it = ranks_.find(rank);
  if (it == ranks_.end()) return "";
  if (!it->second.partial.empty()) return it->second.partial;
  return it->second.lines.empty() ? "" : it->second.lines.back();
}

std::vector<std::string> OutputTail::lines(int rank) const {
  auto it = ranks_.find(rank);
  if (it == ranks_.end()) return {};
  std::vector<std::string> out(it->second.lines.begin(), it->second.lines.end());
  if (!it->second.partial.empty()) out.push_back(it->second.partial);
  return out;
}

}  // namespace ferry
