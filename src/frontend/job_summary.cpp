#include "ferry/frontend/job_summary.hpp"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>

#include "ferry/common/signal_names.hpp"
#include "ferry/common/text.hpp"

namespace ferry {
namespace {

// "0", "1", "SIGKILL", "MPI_Abort 7", "lost": how one rank ended.
std::string exit_text(const RankUsage& r) {
  if (r.aborted) return "MPI_Abort " + std::to_string(r.abort_code);
  if (!r.reported) return "lost";
  if (r.signal != 0) {
    const char* abbrev = signal_abbrev(r.signal);
    return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(r.signal);
  }
  return std::to_string(r.exit_code);
}

bool ok(const RankUsage& r) {
  return r.reported && !r.aborted && r.signal == 0 && r.exit_code == 0;
}

std::string row(const std::vector<std::string>& cells, const std::vector<size_t>& widths) {
  std::string line;
  for (size_t i = 0; i < cells.size(); ++i) {
    line += "  " + cells[i];
    if (i + 1 < cells.size()) line.append(widths[i] - cells[i].size(), ' ');
  }
  return line + '\n';
}

std::string table(std::vector<std::vector<std::string>> rows) {
  std::vector<size_t> widths(rows.front().size(), 0);
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size(); ++i) widths[i] = std::max(widths[i], r[i].size());
  std::string out;
  for (const auto& r : rows) out += row(r, widths);
  return out;
}

// Host lines: ranks, longest wall, summed CPU, largest RSS, the exits that were not 0.
std::vector<std::vector<std::string>> host_rows(const std::vector<RankUsage>& ranks) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const RankUsage*>> by_host;
  for (const auto& r : ranks) {
    if (!by_host.contains(r.host)) order.push_back(r.host);
    by_host[r.host].push_back(&r);
  }
  std::vector<std::vector<std::string>> rows{{"host", "ranks", "wall", "cpu", "peak rss", "exit"}};
  for (const auto& host : order) {
    uint64_t wall = 0, cpu = 0, rss = 0;
    std::vector<int> numbers;
    int spawned = 0;
    struct Who {
      std::vector<int> ranks;
      std::vector<std::string> spawned;
    };
    std::map<std::string, Who> bad;  // exit text → who ended so
    for (const RankUsage* r : by_host[host]) {
      if (r->spawned.empty())
        numbers.push_back(r->rank);
      else
        ++spawned;
      wall = std::max(wall, r->wall_us);
      cpu += r->cpu_us;
      rss = std::max(rss, r->max_rss_kb);
      if (ok(*r)) continue;
      Who& who = bad[exit_text(*r)];
      if (r->spawned.empty())
        who.ranks.push_back(r->rank);
      else
        who.spawned.push_back(r->spawned);
    }
    std::string exits;
    for (const auto& [text, who] : bad) {
      std::string names = who.ranks.empty() ? "" : "rank " + number_ranges(who.ranks);
      for (const auto& s : who.spawned) names += (names.empty() ? "" : ", ") + s;
      exits += (exits.empty() ? "" : ", ") + text + " (" + names + ")";
    }
    std::string ranks = number_ranges(numbers);
    if (spawned > 0)
      ranks += (ranks.empty() ? "" : " ") + std::string("+") + std::to_string(spawned) + " spawned";
    rows.push_back({host, ranks, format_duration_us(wall), format_duration_us(cpu), format_kib(rss),
                    exits.empty() ? "0" : exits});
  }
  return rows;
}

}  // namespace

bool JobSummary::any_reported() const {
  return std::any_of(ranks_.begin(), ranks_.end(), [](const RankUsage& r) { return r.reported; });
}

std::string format_duration_us(uint64_t us) {
  char buf[48];
  const uint64_t s = us / 1'000'000;
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(us) / 1e6);
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%llu min %02llu s", static_cast<unsigned long long>(s / 60),
                  static_cast<unsigned long long>(s % 60));
  else
    std::snprintf(buf, sizeof buf, "%llu h %02llu min", static_cast<unsigned long long>(s / 3600),
                  static_cast<unsigned long long>(s / 60 % 60));
  return buf;
}

std::string format_kib(uint64_t kib) {
  char buf[48];
  if (kib < 1024)
    std::snprintf(buf, sizeof buf, "%llu KiB", static_cast<unsigned long long>(kib));
  else if (kib < uint64_t{1024} * 1024)
    std::snprintf(buf, sizeof buf, "%llu MiB", static_cast<unsigned long long>(kib / 1024));
  else
    std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(kib) / (1024.0 * 1024.0));
  return buf;
}

void JobSummary::begin(const std::vector<std::string>& hosts) {
  ranks_.assign(hosts.size(), RankUsage{});
  for (size_t r = 0; r < hosts.size(); ++r) {
    ranks_[r].rank = static_cast<int>(r);
    ranks_[r].host = hosts[r];
  }
}

void JobSummary::exited(int rank, int exit_code, int signal, uint64_t wall_us, uint64_t cpu_us,
                        uint64_t max_rss_kb) {
  if (rank < 0 || static_cast<size_t>(rank) >= ranks_.size()) return;
  RankUsage& r = ranks_[rank];
  r.reported = true;
  r.exit_code = exit_code;
  r.signal = signal;
  r.wall_us = wall_us;
  r.cpu_us = cpu_us;
  r.max_rss_kb = max_rss_kb;
}

void JobSummary::spawned(int id, const std::string& host, const std::string& name) {
  if (id != static_cast<int>(ranks_.size())) return;  // numbered in order, after the ranks
  RankUsage r;
  r.rank = id;
  r.host = host;
  r.spawned = name;
  ranks_.push_back(std::move(r));
}

void JobSummary::aborted(int rank, int code) {
  if (rank < 0 || static_cast<size_t>(rank) >= ranks_.size()) return;
  ranks_[rank].aborted = true;
  ranks_[rank].abort_code = code;
}

std::string JobSummary::format(const std::string& program, bool per_rank) const {
  if (ranks_.empty()) return "";
  std::vector<std::string> hosts;
  for (const auto& r : ranks_)
    if (std::find(hosts.begin(), hosts.end(), r.host) == hosts.end()) hosts.push_back(r.host);
  const auto spawned = static_cast<size_t>(std::count_if(
      ranks_.begin(), ranks_.end(), [](const RankUsage& r) { return !r.spawned.empty(); }));
  const size_t ranks = ranks_.size() - spawned;
  std::string out =
      program + ": job summary: " + std::to_string(ranks) + " rank" + (ranks == 1 ? "" : "s");
  if (spawned > 0)
    out += " and " + std::to_string(spawned) + " spawned process" + (spawned == 1 ? "" : "es");
  out += " on " + std::to_string(hosts.size()) + " host" + (hosts.size() == 1 ? "" : "s") + "\n";
  if (!per_rank) return out + table(host_rows(ranks_));
  std::vector<std::vector<std::string>> rows{{"rank", "host", "wall", "cpu", "peak rss", "exit"}};
  for (const auto& r : ranks_)
    rows.push_back({r.spawned.empty() ? std::to_string(r.rank) : r.spawned, r.host,
                    format_duration_us(r.wall_us), format_duration_us(r.cpu_us),
                    format_kib(r.max_rss_kb), exit_text(r)});
  return out + table(std::move(rows));
}

}  // namespace ferry
