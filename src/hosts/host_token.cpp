#include "host_token.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>
#include <string>

#include "ferry/common/printable.hpp"

namespace ferry::hosts_detail {
namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '-' || c == '_';
}

// An IPv6 literal with an optional `%zone` (link-local addresses need one).
bool is_ipv6(std::string_view s) {
  std::string_view addr = s;
  if (auto pct = s.find('%'); pct != std::string_view::npos) {
    addr = s.substr(0, pct);
    if (!is_plain_name(s.substr(pct + 1))) return false;
  }
  unsigned char buf[16];
  return inet_pton(AF_INET6, std::string(addr).c_str(), buf) == 1;
}

// User input in a message: bytes that are not printable escaped, a long value cut.
std::string quoted(std::string_view s) { return "'" + printable(s, 80) + "'"; }

// RFC 1123: a name of at most 253 characters, each dot-separated label of 1 to 63. An
// empty reason when it fits.
std::string name_length_problem(std::string_view name) {
  if (name.size() > 253)
    return "a host name of " + std::to_string(name.size()) + " characters (at most 253)";
  size_t start = 0;
  for (size_t dot = name.find('.');; dot = name.find('.', start)) {
    const size_t len = (dot == std::string_view::npos ? name.size() : dot) - start;
    if (len == 0) return "an empty label (two dots, or a dot at the start)";
    if (len > 63) return "a label of " + std::to_string(len) + " characters (at most 63)";
    if (dot == std::string_view::npos || dot + 1 == name.size()) return "";
    start = dot + 1;
  }
}

}  // namespace

bool is_plain_name(std::string_view text) {
  // Names end up on an ssh command line; a leading '-' would be read as an option there.
  if (text.empty() || text.front() == '-') return false;
  for (char c : text) {
    if (!is_name_char(c)) return false;
  }
  return true;
}

Result<int> parse_count(std::string_view text, int limit) {
  if (text.empty()) return make_error("expected a positive integer");
  for (char c : text) {
    if (c < '0' || c > '9') return make_error("expected a positive integer");
  }
  long long value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range || (ec == std::errc() && value > limit)) {
    return make_error("expected at most " + std::to_string(limit));
  }
  if (ec != std::errc() || end != text.data() + text.size() || value < 1) {
    return make_error("expected a positive integer");
  }
  return static_cast<int>(value);
}

Result<HostToken> split_host_token(std::string_view token) {
  HostToken out;
  std::string_view rest = token;
  if (rest.empty()) return make_error("empty host");

  // A user name never holds '@', so the first one ends it.
  if (auto at = rest.find('@'); at != std::string_view::npos) {
    std::string_view user = rest.substr(0, at);
    if (!is_plain_name(user)) {
      return make_error("bad user name " + quoted(user) + " in " + quoted(token) +
                        " (letters, digits, '.', '-', '_')");
    }
    out.user = std::string(user);
    rest.remove_prefix(at + 1);
  }

  std::string_view slots_text;
  bool has_slots = false;
  if (!rest.empty() && rest.front() == '[') {
    auto close = rest.find(']');
    if (close == std::string_view::npos) return make_error("missing ']' in " + quoted(token));
    std::string_view addr = rest.substr(1, close - 1);
    if (!is_ipv6(addr)) {
      return make_error("bad IPv6 address " + quoted(addr) + " in " + quoted(token));
    }
    out.name = std::string(addr);
    std::string_view after = rest.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') {
        return make_error("unexpected " + quoted(after) + " after ']' in " + quoted(token) +
                          " (expected ':slots')");
      }
      has_slots = true;
      slots_text = after.substr(1);
    }
  } else {
    auto colons = std::count(rest.begin(), rest.end(), ':');
    if (colons >= 2) {
      // Bare IPv6: "fe80::1:4" could be an address or address:slots; we read it as an
      // address and ask for brackets when slots are wanted.
      if (!is_ipv6(rest)) {
        return make_error("bad host " + quoted(rest) + " in " + quoted(token) +
                          " (write IPv6 addresses as [addr] or [addr]:slots)");
      }
      out.name = std::string(rest);
    } else {
      std::string_view name = rest;
      if (colons == 1) {
        auto colon = rest.find(':');
        name = rest.substr(0, colon);
        has_slots = true;
        slots_text = rest.substr(colon + 1);
      }
      if (!is_plain_name(name)) {
        return make_error("bad host name " + quoted(name) + " in " + quoted(token) +
                          " (letters, digits, '.', '-', '_')");
      }
      if (std::string why = name_length_problem(name); !why.empty())
        return make_error("bad host name " + quoted(name) + ": " + why);
      out.name = std::string(name);
    }
  }

  if (has_slots) {
    auto slots = parse_count(slots_text, slots_limit);
    if (!slots) {
      return make_error("bad slot count " + quoted(slots_text) + " in " + quoted(token) + " (" +
                        slots.error().message + ")");
    }
    out.slots = *slots;
  }
  return out;
}

}  // namespace ferry::hosts_detail
