// Rank files: parsed on the front end, placed over the job's hosts; each rank's slot list
// travels to its host in the host's binding options (frontend/host_spec.cpp).
#include "ferry/mpmd/rank_file.hpp"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <regex>
#include <string_view>

#include "ferry/binding/slot_list.hpp"
#include "ferry/common/read_text_file.hpp"
#include "ferry/common/text.hpp"

namespace ferry {

namespace {

// The most ranks a rank file may name (a job's limit is far lower; this only bounds parsing).
constexpr long kMaxFileRank = 1 << 24;

// A decimal number in [0, most], or nullopt.
std::optional<long> index_of(std::string_view text, long most) {
  long value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < 0 ||
      value > most)
    return std::nullopt;
  return value;
}

// The host of `e` among `hosts`: its index, or an error naming the line.
Result<size_t> host_of(const RankFile& file, const RankFileEntry& e, const HostList& hosts) {
  const std::string where = file.path + " line " + std::to_string(e.line);
  if (e.host.size() > 2 && e.host.starts_with("+n")) {
    auto n = index_of(std::string_view(e.host).substr(2), kMaxFileRank);
    if (!n) return make_error(where + ": bad relative host '" + e.host + "' (expected +nN)");
    if (*n >= static_cast<long>(hosts.size()))
      return make_error(where + ": " + e.host + ": the job has " + std::to_string(hosts.size()) +
                        " host(s), +n0 to +n" + std::to_string(hosts.size() - 1));
    return static_cast<size_t>(*n);
  }
  for (size_t i = 0; i < hosts.size(); ++i)
    if (hosts[i].name == e.host) return i;
  std::string names;
  for (size_t i = 0; i < hosts.size() && i < 8; ++i) names += (i ? ", " : "") + hosts[i].name;
  if (hosts.size() > 8) names += ", ...";
  return make_error(where + ": host '" + e.host + "' is not one of the job's hosts (" + names +
                    ")");
}

// The number of ranks to place: np, or the file's ranks when np is not given.
int ranks_to_place(const RankFile& file, int np) {
  if (np > 0) return np;
  int most = -1;
  for (const auto& e : file.entries) most = std::max(most, e.rank);
  return most + 1;
}

}  // namespace

std::string RankFile::where(int rank) const {
  const RankFileEntry* e = find(rank);
  return e ? path + " line " + std::to_string(e->line) : path;
}

const RankFileEntry* RankFile::find(int rank) const {
  for (const auto& e : entries)
    if (e.rank == rank) return &e;
  return nullptr;
}

Result<RankFile> parse_rank_file(const std::string& text, const std::string& path) {
  static const std::regex kLine(R"(^rank\s+(\d+)\s*=\s*([^\s=]+)(\s+slot\s*=\s*(\S+))?$)");
  RankFile file;
  file.path = path;
  std::map<int, int> seen;  // rank -> line
  int number = 0;
  for (const std::string& raw : split(text, '\n')) {
    ++number;
    std::string line = raw.substr(0, raw.find('#'));
    line = std::string(trim(line));
    if (line.empty()) continue;
    const std::string where = path + " line " + std::to_string(number);
    std::smatch m;
    if (!std::regex_match(line, m, kLine))
      return make_error(where + ": expected 'rank N=HOST slot=LIST', got '" + line + "'");
    auto rank = index_of(m[1].str(), kMaxFileRank - 1);
    if (!rank) return make_error(where + ": rank " + m[1].str() + " is out of range");
    RankFileEntry e{static_cast<int>(*rank), m[2].str(), m[4].str(), number};
    if (auto [it, fresh] = seen.emplace(e.rank, number); !fresh)
      return make_error(where + ": rank " + std::to_string(e.rank) + " was given on line " +
                        std::to_string(it->second) + " already");
    if (!e.slots.empty())
      if (auto items = parse_slot_list(e.slots); !items)
        return make_error(where + ": " + items.error().message);
    file.entries.push_back(std::move(e));
  }
  if (file.entries.empty()) return make_error(path + ": no 'rank N=HOST slot=LIST' line");
  return file;
}

Result<RankFile> read_rank_file(const std::string& path) {
  auto text = read_text_file(path, size_t{16} << 20, "rank file");
  if (!text) return text.error();
  return parse_rank_file(*text, path);
}

HostList rank_file_hosts(const RankFile& file) {
  HostList hosts;
  for (const auto& e : file.entries) {
    if (e.host.starts_with("+n")) continue;
    auto it = std::find_if(hosts.begin(), hosts.end(),
                           [&](const HostEntry& h) { return h.name == e.host; });
    if (it != hosts.end()) {
      ++it->slots;
      continue;
    }
    HostEntry h;
    h.name = e.host;
    h.slots = 1;
    h.origin = file.path + " line " + std::to_string(e.line);
    hosts.push_back(std::move(h));
  }
  // A `+nN` rank takes a slot of the N-th of those hosts.
  for (const auto& e : file.entries)
    if (e.host.starts_with("+n"))
      if (auto n = index_of(std::string_view(e.host).substr(2), kMaxFileRank);
          n && *n < static_cast<long>(hosts.size()))
        ++hosts[static_cast<size_t>(*n)].slots;
  return hosts;
}

Result<Placement> place_by_rank_file(const RankFile& file, const HostList& hosts, int np,
                                     bool oversubscribe) {
  const int count = ranks_to_place(file, np);
  std::vector<std::vector<int>> ranks_of(hosts.size());
  for (int r = 0; r < count; ++r) {
    const RankFileEntry* e = file.find(r);
    if (!e)
      return make_error(file.path + ": rank " + std::to_string(r) + " is missing (the job has " +
                        std::to_string(count) + " ranks, each needs a line)");
    auto at = host_of(file, *e, hosts);
    if (!at) return at.error();
    ranks_of[*at].push_back(r);
  }
  Placement p;
  p.world_size = count;
  for (size_t i = 0; i < hosts.size(); ++i) {
    const auto& ranks = ranks_of[i];
    if (ranks.empty()) continue;
    const int n = static_cast<int>(ranks.size());
    const HostEntry& h = hosts[i];
    const std::string where = file.where(ranks.back());
    if (h.max_slots > 0 && n > h.max_slots)
      return make_error(where + ": " + std::to_string(n) + " ranks on " + h.name +
                        ", above its max_slots " + std::to_string(h.max_slots));
    if (n > h.slots && !oversubscribe)
      return make_error(where + ": " + std::to_string(n) + " ranks on " + h.name + ", which has " +
                        std::to_string(h.slots) + " slot(s); pass --oversubscribe");
    p.oversubscribed = p.oversubscribed || n > h.slots;
    HostPlan plan;
    plan.host = h;
    plan.node_rank = static_cast<int>(p.hosts.size());
    for (int k = 0; k < n; ++k) {
      RankSlot s;
      s.rank = ranks[static_cast<size_t>(k)];
      s.local_rank = k;
      s.node_rank = plan.node_rank;
      plan.ranks.push_back(s);
    }
    p.hosts.push_back(std::move(plan));
  }
  finish_placement(p);
  return p;
}

}  // namespace ferry
