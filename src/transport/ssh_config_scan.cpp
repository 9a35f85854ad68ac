#include "ferry/transport/ssh_config_scan.hpp"

#include <fnmatch.h>
#include <glob.h>
#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <vector>

#include "ferry/common/read_text_file.hpp"
#include "ferry/common/text.hpp"

namespace ferry {
namespace {

// OpenSSH's own configs are a few KiB; this only keeps an odd Include target (a device, a
// huge file) from being read whole.
constexpr std::size_t kConfigLimit = 16u << 20;

// Splits one config line into keyword and arguments; handles `Key=value` and "quoted args".
std::vector<std::string> tokens(const std::string& line) {
  std::vector<std::string> out;
  const size_t n = line.size();
  auto space = [&](size_t i) { return is_space(line[i]); };
  size_t i = 0;
  while (i < n && space(i)) ++i;
  if (i >= n || line[i] == '#') return out;
  size_t k = i;
  while (k < n && !space(k) && line[k] != '=') ++k;
  out.push_back(line.substr(i, k - i));
  i = k;
  while (i < n && space(i)) ++i;
  if (i < n && line[i] == '=') ++i;
  while (i < n) {
    while (i < n && space(i)) ++i;
    if (i >= n) break;
    std::string tok;
    if (line[i] == '"') {
      for (++i; i < n && line[i] != '"'; ++i) tok += line[i];
      ++i;
    } else {
      for (; i < n && !space(i); ++i) tok += line[i];
    }
    out.push_back(std::move(tok));
  }
  return out;
}

bool host_matches(const std::string& host, const std::vector<std::string>& args) {
  bool any = false;
  for (size_t i = 1; i < args.size(); ++i) {
    std::string pat = lower(args[i]);
    bool negate = !pat.empty() && pat[0] == '!';
    if (negate) pat.erase(0, 1);
    if (fnmatch(pat.c_str(), host.c_str(), 0) == 0) {
      if (negate) return false;  // a negated match vetoes the whole line (OpenSSH)
      any = true;
    }
  }
  return any;
}

bool match_all(const std::vector<std::string>& args) {
  std::vector<std::string> rest;
  for (size_t i = 1; i < args.size(); ++i) {
    std::string a = lower(args[i]);
    if (a != "canonical" && a != "final") rest.push_back(a);
  }
  return rest.size() == 1 && rest[0] == "all";
}

// glob()'s result, freed on every path out of include().
struct Glob {
  glob_t paths{};
  Glob() = default;
  Glob(const Glob&) = delete;
  Glob& operator=(const Glob&) = delete;
  ~Glob() { globfree(&paths); }
};

struct Scan {
  std::string host;
  std::string keyword;
  bool user_file = true;

  std::optional<std::string> file(const std::string& path, bool active, int depth) {
    if (depth > 16) return std::nullopt;
    auto text = read_text_file(path, kConfigLimit, "ssh config file");
    if (!text) return std::nullopt;
    for (const std::string& line : split(*text, '\n')) {
      std::vector<std::string> t = tokens(line);
      if (t.empty()) continue;
      std::string key = lower(t[0]);
      if (key == "host") {
        active = host_matches(host, t);
      } else if (key == "match") {
        active = match_all(t);
      } else if (key == "include" && active) {
        for (size_t i = 1; i < t.size(); ++i) {
          if (auto v = include(t[i], active, depth)) return v;
        }
      } else if (active && key == keyword && t.size() > 1) {
        return t[1];
      }
    }
    return std::nullopt;
  }

  std::optional<std::string> include(std::string pattern, bool active, int depth) {
    if (pattern.starts_with("~/")) {
      pattern = ssh_home_dir() + pattern.substr(1);
    } else if (pattern.empty() || pattern[0] != '/') {
      pattern = (user_file ? ssh_home_dir() + "/.ssh/" : std::string("/etc/ssh/")) + pattern;
    }
    Glob g;
    std::optional<std::string> found;
    if (glob(pattern.c_str(), 0, nullptr, &g.paths) == 0) {
      for (size_t i = 0; i < g.paths.gl_pathc && !found; ++i) {
        found = file(g.paths.gl_pathv[i], active, depth + 1);
      }
    }
    return found;
  }
};

}  // namespace

std::string ssh_home_dir() {
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* result = nullptr;
  if (getpwuid_r(getuid(), &pw, buf.data(), buf.size(), &result) == 0 && result != nullptr &&
      result->pw_dir != nullptr) {
    return result->pw_dir;
  }
  const char* home = std::getenv("HOME");
  return home ? home : "";
}

std::string ssh_config_value(const std::string& config_file, const std::string& host,
                             std::string_view keyword) {
  Scan scan{lower(host), lower(keyword), true};
  if (!config_file.empty()) {
    std::string path = config_file;
    if (path.starts_with("~/")) path = ssh_home_dir() + path.substr(1);
    return scan.file(path, true, 0).value_or("");
  }
  if (auto v = scan.file(ssh_home_dir() + "/.ssh/config", true, 0)) return *v;
  scan.user_file = false;
  return scan.file("/etc/ssh/ssh_config", true, 0).value_or("");
}

bool strict_host_key_accepts_new(const std::string& value) {
  std::string v = lower(value);
  return v == "accept-new" || v == "no" || v == "off";
}

}  // namespace ferry
