#include "ferry/plan/env_sources.hpp"

#include <fnmatch.h>

#include "ferry/common/environ.hpp"
#include "ferry/common/read_text_file.hpp"
#include "ferry/common/text.hpp"

namespace ferry {

bool is_export_pattern(const std::string& item) {
  return item.substr(0, item.find('=')).find_first_of("*?[") != std::string::npos;
}

Result<std::vector<std::string>> expand_export_patterns(const std::vector<std::string>& items,
                                                        char** environ_list,
                                                        std::vector<std::string>& warnings) {
  std::vector<std::string> out;
  for (const auto& item : items) {
    if (!is_export_pattern(item)) {
      out.push_back(item);
      continue;
    }
    if (item.find('=') != std::string::npos)
      return make_error("-x '" + item + "': a pattern takes its values from this environment " +
                        "(no =value)");
    size_t matched = 0;
    for (char** e = environ_list; e && *e; ++e) {
      const std::string_view kv(*e);
      const auto eq = kv.find('=');
      if (eq == std::string_view::npos) continue;
      const std::string name(kv.substr(0, eq));
      if (!is_variable_name(name) || ::fnmatch(item.c_str(), name.c_str(), 0) != 0) continue;
      out.push_back(name);
      ++matched;
    }
    if (matched == 0)
      warnings.push_back("-x '" + item + "': matches no variable in this environment");
  }
  return out;
}

Result<std::vector<std::string>> parse_env_file(const std::string& text, const std::string& file) {
  std::vector<std::string> out;
  size_t line_no = 0;
  for (size_t i = 0; i < text.size();) {
    const size_t nl = std::min(text.find('\n', i), text.size());
    std::string_view line = trim(std::string_view(text).substr(i, nl - i));
    i = nl + 1;
    ++line_no;
    if (line.empty() || line.front() == '#') continue;
    if (line.starts_with("export ")) line = trim(line.substr(7));
    const auto eq = line.find('=');
    const std::string_view name = line.substr(0, eq);
    if (!is_variable_name(name))
      return make_error(file + ":" + std::to_string(line_no) + ": '" + std::string(line) +
                        "' is not KEY=VALUE (bad variable name)");
    if (eq == std::string_view::npos) {
      out.emplace_back(name);  // from this environment, as -x NAME
      continue;
    }
    std::string_view value = line.substr(eq + 1);
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
        value.back() == value.front())
      value = value.substr(1, value.size() - 2);
    out.push_back(std::string(name) + "=" + std::string(value));
  }
  return out;
}

Result<std::vector<std::string>> read_env_file(const std::string& path) {
  auto text = read_text_file(path, std::size_t{1} << 20, "env file");
  if (!text) return text.error();
  return parse_env_file(*text, path);
}

}  // namespace ferry
