// Slurm's compressed host lists and task counts (see `scontrol show hostnames`).

#include "ferry/hosts/slurm.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdlib>
#include <initializer_list>
#include <string_view>

#include "ferry/common/text.hpp"
#include "host_token.hpp"

namespace ferry {
namespace {

// More hosts than any Slurm allocation holds (the largest machines have tens of thousands
// of nodes); it bounds the memory and time a malformed list can cost.
constexpr std::size_t names_limit = 1u << 17;

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

// One bracket group, already expanded: numbers as text with their zero padding.
using Group = std::vector<std::string>;

// A hostlist item is literal text and bracket groups in turn: text[0] g[0] text[1] ...
struct Pattern {
  std::vector<std::string> text;
  std::vector<Group> groups;
};

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

std::string padded(unsigned long long value, std::size_t width) {
  std::string digits = std::to_string(value);
  if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
  return digits;
}

// Expands the inside of one `[...]`, e.g. "01-04,07".
Result<Group> expand_group(std::string_view inside, const std::string& expr) {
  Group out;
  std::string_view rest = inside;
  while (true) {
    auto comma = rest.find(',');
    std::string_view range = rest.substr(0, comma);
    auto dash = range.find('-');
    std::string_view lo = range.substr(0, dash);
    std::string_view hi = dash == std::string_view::npos ? lo : range.substr(dash + 1);
    if (!all_digits(lo) || !all_digits(hi)) {
      return make_error("bad range " + quoted(range) + " in " + quoted(expr) +
                        " (expected N or N-M)");
    }
    unsigned long long a = 0, b = 0;
    auto ra = std::from_chars(lo.data(), lo.data() + lo.size(), a);
    auto rb = std::from_chars(hi.data(), hi.data() + hi.size(), b);
    if (ra.ec != std::errc() || rb.ec != std::errc()) {
      return make_error("bad range " + quoted(range) + " in " + quoted(expr) + " (too large)");
    }
    if (a > b) {
      return make_error("bad range " + quoted(range) + " in " + quoted(expr) +
                        " (low end above high end)");
    }
    if (b - a >= names_limit - out.size()) {
      return make_error("range " + quoted(range) + " in " + quoted(expr) + " is too long");
    }
    for (unsigned long long v = a; v <= b; ++v) out.push_back(padded(v, lo.size()));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

Result<Pattern> parse_item(std::string_view item, const std::string& expr) {
  Pattern p;
  p.text.emplace_back();
  std::size_t i = 0;
  while (i < item.size()) {
    char c = item[i];
    if (c == ']') return make_error("unmatched ']' in " + quoted(expr));
    if (c != '[') {
      p.text.back() += c;
      ++i;
      continue;
    }
    auto close = item.find(']', i);
    if (close == std::string_view::npos) return make_error("missing ']' in " + quoted(expr));
    std::string_view inside = item.substr(i + 1, close - i - 1);
    if (inside.find('[') != std::string_view::npos) {
      return make_error("nested '[' in " + quoted(expr));
    }
    auto group = expand_group(inside, expr);
    if (!group) return group.error();
    p.groups.push_back(std::move(*group));
    p.text.emplace_back();
    i = close + 1;
  }
  return p;
}

// Slurm's order: the first group varies slowest, like nested loops written left to right.
void expand_pattern(const Pattern& p, std::size_t g, std::string prefix,
                    std::vector<std::string>& out) {
  prefix += p.text[g];
  if (g == p.groups.size()) {
    out.push_back(std::move(prefix));
    return;
  }
  for (const std::string& number : p.groups[g]) expand_pattern(p, g + 1, prefix + number, out);
}

// Splits at commas outside brackets.
Result<std::vector<std::string_view>> split_items(std::string_view expr, const std::string& whole) {
  std::vector<std::string_view> items;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= expr.size(); ++i) {
    if (i < expr.size() && expr[i] == '[') ++depth;
    if (i < expr.size() && expr[i] == ']') --depth;
    if (depth < 0) return make_error("unmatched ']' in " + quoted(whole));
    if (i == expr.size() || (expr[i] == ',' && depth == 0)) {
      std::string_view item = trim(expr.substr(start, i - start));
      if (item.empty()) return make_error("empty host name in " + quoted(whole));
      items.push_back(item);
      start = i + 1;
    }
  }
  if (depth != 0) return make_error("missing ']' in " + quoted(whole));
  return items;
}

std::string first_set(const std::map<std::string, std::string>& env,
                      std::initializer_list<const char*> names, std::string& which) {
  for (const char* name : names) {
    auto it = env.find(name);
    if (it != env.end() && !trim(it->second).empty()) {
      which = name;
      return it->second;
    }
  }
  return {};
}

}  // namespace

Result<std::vector<std::string>> expand_hostlist(const std::string& expr) {
  std::string_view body = trim(expr);
  if (body.empty()) return make_error("empty host list");
  auto items = split_items(body, expr);
  if (!items) return items.error();

  std::vector<std::string> names;
  for (std::string_view item : *items) {
    for (char c : item) {
      if (is_space(c)) {
        return make_error("space inside " + quoted(item) + " in " + quoted(expr));
      }
    }
    auto pattern = parse_item(item, expr);
    if (!pattern) return pattern.error();
    std::size_t count = 1;
    for (const Group& g : pattern->groups) {
      if (g.size() > (names_limit - names.size()) / count) {
        return make_error(quoted(expr) + " expands to more than " + std::to_string(names_limit) +
                          " names");
      }
      count *= g.size();
    }
    expand_pattern(*pattern, 0, "", names);
  }
  for (const std::string& name : names) {
    if (!hosts_detail::is_plain_name(name)) {
      return make_error("bad host name " + quoted(name) + " in " + quoted(expr));
    }
  }
  return names;
}

Result<std::vector<int>> expand_tasks_per_node(const std::string& text) {
  std::string_view rest = trim(text);
  if (rest.empty()) return make_error("empty task count list");
  std::vector<int> counts;
  while (true) {
    auto comma = rest.find(',');
    std::string_view item = trim(rest.substr(0, comma));
    auto bad = [&] {
      return make_error("bad item " + quoted(item) + " in " + quoted(text) +
                        " (expected N or N(xM), N and M positive)");
    };
    std::string_view count_text = item;
    int repeat = 1;
    if (auto open = item.find('('); open != std::string_view::npos) {
      if (item.size() < open + 4 || item[open + 1] != 'x' || item.back() != ')') return bad();
      auto times = hosts_detail::parse_count(item.substr(open + 2, item.size() - open - 3),
                                             static_cast<int>(names_limit));
      if (!times) return bad();
      repeat = *times;
      count_text = item.substr(0, open);
    }
    auto count = hosts_detail::parse_count(count_text, hosts_detail::slots_limit);
    if (!count) return bad();
    if (static_cast<std::size_t>(repeat) > names_limit - counts.size()) {
      return make_error(quoted(text) + " lists more than " + std::to_string(names_limit) +
                        " counts");
    }
    counts.insert(counts.end(), static_cast<std::size_t>(repeat), *count);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return counts;
}

Result<HostList> hosts_from_slurm(const std::map<std::string, std::string>& env) {
  std::string list_var;
  std::string list = first_set(env, {"SLURM_JOB_NODELIST", "SLURM_NODELIST"}, list_var);
  if (list_var.empty()) {
    return make_error("SLURM_JOB_NODELIST is not set (not inside a Slurm allocation?)");
  }
  auto names = expand_hostlist(list);
  if (!names) return make_error(list_var + ": " + names.error().message);

  std::vector<int> slots(names->size(), 1);
  std::string count_var;
  std::string tasks = first_set(env, {"SLURM_TASKS_PER_NODE"}, count_var);
  if (!count_var.empty()) {
    auto counts = expand_tasks_per_node(tasks);
    if (!counts) return make_error(count_var + ": " + counts.error().message);
    if (counts->size() != names->size()) {
      return make_error(count_var + " " + quoted(tasks) + " gives " +
                        std::to_string(counts->size()) + " counts for the " +
                        std::to_string(names->size()) + " nodes of " + list_var + " " +
                        quoted(list));
    }
    slots = std::move(*counts);
  } else {
    std::string per_node = first_set(env, {"SLURM_NTASKS_PER_NODE"}, count_var);
    if (!count_var.empty()) {
      auto n = hosts_detail::parse_count(trim(per_node), hosts_detail::slots_limit);
      if (!n) {
        return make_error(count_var + ": bad value " + quoted(per_node) + " (" + n.error().message +
                          ")");
      }
      slots.assign(names->size(), *n);
    }
  }

  HostList nodes;
  for (std::size_t i = 0; i < names->size(); ++i) {
    HostEntry host;
    host.name = std::move((*names)[i]);
    host.slots = slots[i];
    host.origin = list_var;
    nodes.push_back(std::move(host));
  }
  HostList hosts;
  merge_hosts(hosts, nodes);
  return hosts;
}

bool in_slurm_allocation() {
  const char* id = std::getenv("SLURM_JOB_ID");
  const char* path = std::getenv("PATH");
  if (!id || !*id || !path) return false;
  for (const auto& dir : split(path, ':'))
    if (!dir.empty() && ::access((dir + "/srun").c_str(), X_OK) == 0) return true;
  return false;
}

bool hosts_in_allocation(const HostList& hosts) {
  const char* list = std::getenv("SLURM_JOB_NODELIST");
  if (!list) list = std::getenv("SLURM_NODELIST");
  if (!list) return false;
  auto nodes = expand_hostlist(list);
  if (!nodes) return false;
  for (const auto& h : hosts)
    if (std::find(nodes->begin(), nodes->end(), h.name) == nodes->end()) return false;
  return true;
}

bool is_slurm_step_variable(std::string_view name) {
  static constexpr std::string_view kExact[] = {
      "SLURM_PROCID",       "SLURM_LOCALID",        "SLURM_NODEID",
      "SLURM_NTASKS",       "SLURM_NPROCS",         "SLURM_STEPID",
      "SLURM_TASK_PID",     "SLURM_GTIDS",          "SLURM_LAUNCH_NODE_IPADDR",
      "SLURM_DISTRIBUTION", "SLURM_TASKS_PER_NODE", "SLURM_UMASK",
      "SLURM_PRIO_PROCESS",
  };
  static constexpr std::string_view kPrefixes[] = {"SLURM_STEP_", "SLURM_CPU_BIND",
                                                   "SLURM_SRUN_COMM_", "SLURM_MPI_TYPE"};
  for (auto e : kExact)
    if (name == e) return true;
  for (auto p : kPrefixes)
    if (name.starts_with(p)) return true;
  return false;
}

}  // namespace ferry
