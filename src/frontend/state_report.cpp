#include "ferry/frontend/state_report.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace ferry {
namespace {

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", s);
  return buf;
}

std::string percent(uint32_t permille) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%u%%", (permille + 5) / 10);
  return buf;
}

std::string row_text(const std::string& program, const StateRow& r) {
  std::string head = program + ": rank " + std::to_string(r.rank) + " on " + r.host + ": ";
  if (!r.answered) return head + r.missing + "\n";
  const wire::RankState& s = r.state;
  head += "pid " + std::to_string(s.pid) + ", " + s.state + ", CPU " + percent(s.cpu_permille) +
          " over the last " + seconds(s.sample_ms / 1000.0);
  if (s.threads > 0) head += ", " + std::to_string(s.threads) + " thread(s)";
  if (r.since_output_s >= 0) head += ", last output " + seconds(r.since_output_s) + " ago";
  std::string text = head + "\n";
  std::istringstream in(s.stack);
  for (std::string line; std::getline(in, line);) text += "    " + line + "\n";
  return text;
}

}  // namespace

std::string format_state_report(const std::string& program, const std::string& why,
                                std::vector<StateRow> rows) {
  std::sort(rows.begin(), rows.end(),
            [](const StateRow& a, const StateRow& b) { return a.rank < b.rank; });
  std::string text = program + ": state of every rank (" + why + "):\n";
  for (const StateRow& r : rows) text += row_text(program, r);
  text += program + ": end of the state report\n";
  return text;
}

}  // namespace ferry
