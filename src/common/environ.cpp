#include "ferry/common/environ.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <climits>
#include <system_error>

#include "ferry/common/posix_handles.hpp"
#include "ferry/common/read_text_file.hpp"

namespace ferry {
namespace {

// An environment is bounded by the kernel's argument limit (a quarter of the stack limit);
// this is far above any real one and only stops a broken or fake file from eating memory.
constexpr std::size_t kEnvironLimit = 64u << 20;

}  // namespace

bool is_variable_name(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::optional<std::string_view> env_entry_value(std::string_view entry, std::string_view name) {
  if (name.empty() || entry.size() <= name.size() || !entry.starts_with(name) ||
      entry[name.size()] != '=')
    return std::nullopt;
  return entry.substr(name.size() + 1);
}

std::optional<std::string_view> env_value(const std::vector<std::string>& env,
                                          std::string_view name) {
  for (std::size_t i = env.size(); i-- > 0;)  // the last entry wins
    if (auto value = env_entry_value(env[i], name)) return value;
  return std::nullopt;
}

std::vector<std::string> split_environ(std::string_view block) {
  std::vector<std::string> entries;
  while (!block.empty()) {
    auto nul = block.find('\0');
    if (nul > 0) entries.emplace_back(block.substr(0, nul));
    if (nul == std::string_view::npos) break;
    block.remove_prefix(nul + 1);
  }
  return entries;
}

std::optional<pid_t> parse_pid(std::string_view name) {
  if (name.empty() || name.front() < '1' || name.front() > '9') return std::nullopt;
  long long value = 0;
  auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), value);
  if (ec != std::errc() || end != name.data() + name.size() || value > INT_MAX) return std::nullopt;
  return static_cast<pid_t>(value);
}

Result<std::vector<pid_t>> list_pids(const std::string& proc_root) {
  DirPtr dir = open_dir(proc_root);
  if (!dir)
    return make_error(proc_root + ": cannot list: " + std::generic_category().message(errno));
  std::vector<pid_t> pids;
  while (dirent* e = ::readdir(dir.get()))
    if (auto pid = parse_pid(e->d_name)) pids.push_back(*pid);
  return pids;
}

void list_children(pid_t pid, std::vector<pid_t>& out, const std::string& proc_root) {
  const std::string tasks = proc_root + "/" + std::to_string(pid) + "/task";
  DirPtr dir = open_dir(tasks);
  if (!dir) return;
  while (const dirent* e = ::readdir(dir.get())) {
    if (!parse_pid(e->d_name)) continue;
    auto text =
        read_text_file(tasks + "/" + e->d_name + "/children", size_t{1} << 20, "children list");
    if (!text) continue;
    std::string_view rest(*text);
    while (!rest.empty()) {
      const size_t b = rest.find_first_not_of(" \n");  // "12 34 ", no newline from Linux
      if (b == std::string_view::npos) break;
      rest.remove_prefix(b);
      const size_t end = std::min(rest.find_first_of(" \n"), rest.size());
      if (auto child = parse_pid(rest.substr(0, end))) out.push_back(*child);
      rest.remove_prefix(end);
    }
  }
}

bool has_children_lists(pid_t pid, const std::string& proc_root) {
  const std::string id = std::to_string(pid);
  return ::access((proc_root + "/" + id + "/task/" + id + "/children").c_str(), R_OK) == 0;
}

std::vector<std::string_view> stat_fields(std::string_view text) {
  std::vector<std::string_view> fields;
  const size_t close = text.rfind(')');
  if (close == std::string_view::npos) return fields;
  std::string_view rest = text.substr(close + 1);
  for (;;) {
    const size_t b = rest.find_first_not_of(" \n");
    if (b == std::string_view::npos) return fields;
    rest.remove_prefix(b);
    const size_t e = std::min(rest.find_first_of(" \n"), rest.size());
    fields.push_back(rest.substr(0, e));
    rest.remove_prefix(e);
  }
}

Result<std::vector<std::string>> read_environ(pid_t pid, const std::string& proc_root) {
  auto block = read_text_file(proc_root + "/" + std::to_string(pid) + "/environ", kEnvironLimit,
                              "process environment");
  if (!block) return block.error();
  return split_environ(*block);
}

void for_each_environ(const std::string& proc_root,
                      const std::function<bool(pid_t, const std::vector<std::string>&)>& visit) {
  auto pids = list_pids(proc_root);
  if (!pids) return;
  for (pid_t pid : *pids) {
    auto env = read_environ(pid, proc_root);
    if (env && !visit(pid, *env)) return;
  }
}

}  // namespace ferry
