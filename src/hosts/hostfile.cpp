// Hostfiles: one host per line in the dialects of Open MPI, Horovod, DeepSpeed and MPICH
// hydra, plus ferry's own per-host keys (port=, user=, ferryd=).

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/common/read_text_file.hpp"
#include "ferry/common/text.hpp"
#include "ferry/hosts/host_fields.hpp"
#include "ferry/hosts/host_list.hpp"
#include "host_token.hpp"

namespace ferry {
namespace {

// Anything larger is not a hostfile (think /dev/zero); stop before eating memory.
constexpr std::size_t hostfile_size_limit = 16u << 20;

const char* const known_keys = "slots, max_slots, port, user, ferryd";

enum class Key { slots, max_slots, port, user, ferryd, unknown };

// Open MPI's lexer accepts several spellings; hydra's `host:N` needs no key at all.
Key key_of(std::string_view k) {
  if (k == "slots" || k == "count" || k == "cpu") return Key::slots;
  if (k == "max_slots" || k == "max-slots" || k == "slots_max" || k == "slots-max") {
    return Key::max_slots;
  }
  if (k == "port") return Key::port;
  if (k == "user" || k == "username" || k == "user_name" || k == "user-name") return Key::user;
  if (k == "ferryd") return Key::ferryd;
  return Key::unknown;
}

// `#` starts a comment anywhere; `//` does at the start of a word (Open MPI), so a path
// value such as ferryd=/opt//bin/ferryd keeps its slashes.
std::string_view strip_comment(std::string_view line) {
  line = line.substr(0, line.find('#'));
  for (std::size_t i = 0; i + 1 < line.size(); ++i) {
    if (line[i] == '/' && line[i + 1] == '/' && (i == 0 || is_space(line[i - 1]))) {
      return line.substr(0, i);
    }
  }
  return line;
}

// Words of a line, with `key = value` and `key= value` glued into `key=value` as Open MPI's
// lexer allows spaces around '='.
std::vector<std::string> words_of(std::string_view line) {
  std::string glued;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '=') {
      while (!glued.empty() && is_space(glued.back())) glued.pop_back();
      glued += '=';
      while (i + 1 < line.size() && is_space(line[i + 1])) ++i;
    } else {
      glued += line[i];
    }
  }
  std::vector<std::string> words;
  std::string word;
  for (char c : glued) {
    if (is_space(c)) {
      if (!word.empty()) words.push_back(std::move(word));
      word.clear();
    } else {
      word += c;
    }
  }
  if (!word.empty()) words.push_back(std::move(word));
  return words;
}

// What one line has set so far: each key may appear once.
struct LineFields {
  HostEntry host;
  std::optional<int> slots, max_slots;
  bool user_set = false, port_set = false, ferryd_set = false;
};

// Applies `key=value` (the whole `word`) to `f`; returns why it cannot, or "".
std::string set_key(LineFields& f, const std::string& word, const std::string& key,
                    const std::string& value) {
  auto again = [&word](const char* what) {
    return "'" + word + "' sets the " + what + " a second time on this line";
  };
  auto bad_count = [&](const Error& e) {
    return "bad " + key + " value '" + value + "' (" + e.message + ")";
  };
  switch (key_of(key)) {
    case Key::slots:
    case Key::max_slots: {
      const bool limit = key_of(key) == Key::max_slots;
      std::optional<int>& target = limit ? f.max_slots : f.slots;
      if (target) return again(limit ? "slot limit" : "slot count");
      auto n = hosts_detail::parse_count(value, hosts_detail::slots_limit);
      if (!n) return bad_count(n.error());
      target = *n;
      return "";
    }
    case Key::port: {
      if (f.port_set) return again("port");
      auto n = hosts_detail::parse_count(value, 65535);
      if (!n) return "bad port value '" + value + "' (expected 1-65535)";
      f.host.port = *n;
      f.port_set = true;
      return "";
    }
    case Key::user:
      if (f.user_set) return again("user");
      if (!hosts_detail::is_plain_name(value))
        return "bad user value '" + value + "' (letters, digits, '.', '-', '_')";
      f.host.user = value;
      f.user_set = true;
      return "";
    case Key::ferryd:
      if (f.ferryd_set) return again("ferryd path");
      if (!is_safe_ferryd_path(value))
        return "bad ferryd value '" + value +
               "' (a path of letters, digits, '/', '.', '-', '_', '+')";
      f.host.ferryd = value;
      f.ferryd_set = true;
      return "";
    case Key::unknown:
      break;
  }
  return "unknown key '" + key + "' (known: " + known_keys + ")";
}

// Parses one non-blank line; `where` is "file:line".
Result<HostEntry> parse_line(const std::vector<std::string>& words, const std::string& where,
                             int default_slots) {
  auto fail = [&where](const std::string& what) { return make_error(where + ": " + what); };
  const std::string& first = words.front();
  if (first.find('=') != std::string::npos) {
    return fail("expected a host name before '" + first + "'");
  }
  auto token = hosts_detail::split_host_token(first);
  if (!token) return fail(token.error().message);

  LineFields f;
  f.host.name = std::move(token->name);
  f.host.user = std::move(token->user);
  f.host.origin = where;
  f.slots = token->slots;
  f.user_set = !f.host.user.empty();
  for (std::size_t i = 1; i < words.size(); ++i) {
    const std::string& word = words[i];
    auto eq = word.find('=');
    if (eq == std::string::npos || eq == 0) {
      return fail("unexpected '" + word + "' after the host name (expected key=value)");
    }
    std::string key = word.substr(0, eq);
    std::string value = word.substr(eq + 1);
    if (value.empty()) return fail("empty value for '" + key + "'");
    if (std::string why = set_key(f, word, key, value); !why.empty()) return fail(why);
  }

  HostEntry& host = f.host;
  std::optional<int>& slots = f.slots;
  if (f.max_slots) {
    const int max_slots = *f.max_slots;
    if (!slots) {
      // `host max_slots=2` with a larger default: the limit wins, as it is explicit.
      slots = std::min(default_slots, max_slots);
    } else if (*slots > max_slots) {
      return fail("max_slots=" + std::to_string(max_slots) +
                  " is less than slots=" + std::to_string(*slots));
    }
    host.max_slots = max_slots;
  }
  host.slots = slots.value_or(default_slots);
  return host;
}

}  // namespace

Result<HostList> parse_hostfile_text(const std::string& text, const std::string& file,
                                     int default_slots) {
  if (default_slots < 1) {
    return make_error(file + ": default slot count must be positive (got " +
                      std::to_string(default_slots) + ")");
  }
  HostList lines;
  std::string_view rest = text;
  for (int line_no = 1; !rest.empty(); ++line_no) {
    auto newline = rest.find('\n');
    std::string_view line = rest.substr(0, newline);
    rest.remove_prefix(newline == std::string_view::npos ? rest.size() : newline + 1);

    auto words = words_of(strip_comment(line));
    if (words.empty()) continue;
    auto host = parse_line(words, file + ":" + std::to_string(line_no), default_slots);
    if (!host) return host.error();
    lines.push_back(std::move(*host));
  }
  // Open MPI: a host listed again gets the slots of both lines.
  HostList hosts;
  merge_hosts(hosts, lines);
  if (hosts.empty()) return make_error(file + ": no hosts (only comments and blank lines)");
  return hosts;
}

Result<HostList> read_hostfile(const std::string& path, int default_slots) {
  auto text = read_text_file(path, hostfile_size_limit, "hostfile");
  if (!text) return text.error();
  return parse_hostfile_text(*text, path, default_slots);
}

}  // namespace ferry
