// The process-tree reader: each process's stat line, its threads' children files, summed.
#include "ferry/monitor/proc_tree.hpp"

#include <dirent.h>
#include <unistd.h>

#include <array>
#include <charconv>
#include <string_view>

#include "ferry/common/environ.hpp"
#include "ferry/common/read_text_file.hpp"

namespace ferry {
namespace {

constexpr size_t kMaxDepth = 64;
constexpr size_t kMaxProcesses = 4096;

// The fields of one stat line that the reading sums.
struct StatFields {
  bool ok = false;
  char state = '?';
  uint64_t ticks = 0;  // utime + stime + cutime + cstime
  uint64_t rss_pages = 0;
  uint32_t threads = 0;
};

uint64_t number(std::string_view s) {
  uint64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

// /proc/PID/stat: "pid (comm) S ppid ..."; the name may hold spaces and parentheses, so the
// fields are counted from the last ')'.
StatFields read_stat(const std::string& proc, pid_t pid) {
  StatFields f;
  auto text = read_text_file(proc + "/" + std::to_string(pid) + "/stat", 4096, "stat file");
  if (!text) return f;
  // utime(11) stime(12) cutime(13) cstime(14) num_threads(17) rss(21): stat_fields' numbering.
  const auto field = stat_fields(*text);
  if (field.size() < 22) return f;
  f.state = field[0].empty() ? '?' : field[0][0];
  f.ticks = number(field[11]) + number(field[12]) + number(field[13]) + number(field[14]);
  f.threads = static_cast<uint32_t>(number(field[17]));
  f.rss_pages = number(field[21]);
  f.ok = true;
  return f;
}

std::string status_field(const std::string& proc, pid_t pid, std::string_view name) {
  auto text =
      read_text_file(proc + "/" + std::to_string(pid) + "/status", size_t{64} << 10, "status");
  if (!text) return "";
  std::string_view rest(*text);
  while (!rest.empty()) {
    const size_t end = std::min(rest.find('\n'), rest.size());
    std::string_view line = rest.substr(0, end);
    rest.remove_prefix(std::min(end + 1, rest.size()));
    if (line.size() > name.size() && line.substr(0, name.size()) == name &&
        line[name.size()] == ':') {
      line.remove_prefix(name.size() + 1);
      const size_t b = line.find_first_not_of(" \t");
      return b == std::string_view::npos ? "" : std::string(line.substr(b));
    }
  }
  return "";
}

}  // namespace

TreeReading read_tree(pid_t pid, const std::string& proc) {
  TreeReading r;
  const uint64_t page_kb = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)) / 1024;
  std::vector<pid_t> level{pid};
  for (size_t depth = 0; depth < kMaxDepth && !level.empty(); ++depth) {
    std::vector<pid_t> next;
    for (pid_t p : level) {
      if (r.processes >= kMaxProcesses) return r;
      const StatFields f = read_stat(proc, p);
      if (!f.ok) {
        if (depth == 0) return r;  // the rank itself is gone
        continue;                  // a child ended between the two reads
      }
      if (depth == 0) {
        r.ok = true;
        r.state = (f.state == 't') ? 'T' : f.state;
      }
      if (f.state == 'D') r.state = 'D';
      r.cpu_ticks += f.ticks;
      r.rss_kb += f.rss_pages * page_kb;
      r.threads += f.threads;
      ++r.processes;
      list_children(p, next, proc);
    }
    level = std::move(next);
  }
  return r;
}

std::string allowed_cpus(pid_t pid, const std::string& proc) {
  return status_field(proc, pid, "Cpus_allowed_list");
}

std::string visible_devices(pid_t pid, const std::string& proc) {
  auto env =
      read_text_file(proc + "/" + std::to_string(pid) + "/environ", size_t{4} << 20, "environ");
  if (!env) return "";
  static constexpr std::array<std::string_view, 4> kNames = {
      "CUDA_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
      "ROCR_VISIBLE_DEVICES"};
  for (std::string_view name : kNames) {
    std::string_view rest(*env);
    while (!rest.empty()) {
      const size_t end = std::min(rest.find('\0'), rest.size());
      const std::string_view entry = rest.substr(0, end);
      rest.remove_prefix(std::min(end + 1, rest.size()));
      if (entry.size() > name.size() && entry.substr(0, name.size()) == name &&
          entry[name.size()] == '=')
        return std::string(entry);
    }
  }
  return "";
}

std::vector<std::string> numa_cpu_lists(const std::string& root) {
  const std::string nodes = root + (root.ends_with('/') ? "" : "/") + "sys/devices/system/node";
  std::map<int, std::string> found;
  if (DIR* dir = ::opendir(nodes.c_str())) {
    while (const dirent* e = ::readdir(dir)) {
      const std::string_view name(e->d_name);
      if (name.size() <= 4 || name.substr(0, 4) != "node") continue;
      int n = -1;
      auto [end, ec] = std::from_chars(name.data() + 4, name.data() + name.size(), n);
      if (ec != std::errc{} || end != name.data() + name.size()) continue;
      auto list = read_text_file(nodes + "/" + std::string(name) + "/cpulist", size_t{64} << 10,
                                 "cpu list");
      if (list && !list->empty()) found[n] = list->substr(0, list->find('\n'));
    }
    ::closedir(dir);
  }
  std::vector<std::string> out;
  out.reserve(found.size());
  for (auto& [n, list] : found) out.push_back(std::move(list));
  if (out.empty()) {
    auto online =
        read_text_file(root + (root.ends_with('/') ? "" : "/") + "sys/devices/system/cpu/online",
                       size_t{64} << 10, "cpu list");
    if (online && !online->empty()) out.push_back(online->substr(0, online->find('\n')));
  }
  return out;
}

bool TreeSampler::sample(pid_t pid, Clock::time_point since, RankUse& use) {
  const TreeReading r = read_tree(pid, proc_);
  if (!r.ok) return false;
  const auto now = Clock::now();
  auto it = last_.try_emplace(pid, Last{0, since}).first;
  const Last before = it->second;
  it->second = Last{r.cpu_ticks, now};
  use.state = r.state;
  use.rss_kb = r.rss_kb;
  use.threads = r.threads;
  use.processes = r.processes;
  use.cpu_permille = 0;
  const auto elapsed = std::chrono::duration<double>(now - before.at).count();
  if (elapsed > 0 && r.cpu_ticks >= before.cpu_ticks) {
    static const auto ticks_per_s = static_cast<double>(::sysconf(_SC_CLK_TCK));
    const double used_s = static_cast<double>(r.cpu_ticks - before.cpu_ticks) / ticks_per_s;
    use.cpu_permille = static_cast<uint32_t>(used_s * 1000.0 / elapsed);
  }
  return true;
}

void TreeSampler::keep_only(const std::vector<pid_t>& live) {
  for (auto it = last_.begin(); it != last_.end();) {
    bool keep = false;
    for (pid_t p : live) keep = keep || p == it->first;
    it = keep ? std::next(it) : last_.erase(it);
  }
}

}  // namespace ferry
