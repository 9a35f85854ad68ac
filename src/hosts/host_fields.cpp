// A host from separate fields (job file), checked like -H items and hostfile lines.

#include "ferry/hosts/host_fields.hpp"

#include <algorithm>

#include "host_token.hpp"

namespace ferry {

bool is_safe_ferryd_path(const std::string& path) {
  if (path.empty() || path.front() == '-') return false;
  return std::all_of(path.begin(), path.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '/' ||
           c == '.' || c == '-' || c == '_' || c == '+';
  });
}

Result<HostEntry> host_from_fields(const HostFields& f, int default_slots,
                                   const std::string& origin) {
  using hosts_detail::slots_limit;
  auto token = hosts_detail::split_host_token(f.name);
  if (!token) {  // its own words name the field when they start with "bad"
    const std::string& why = token.error().message;
    return make_error(why.rfind("bad ", 0) == 0 ? why : "bad name: " + why);
  }
  if (!token->user.empty())
    return make_error("name '" + f.name + "' carries a user; use user = \"" + token->user + "\"");
  if (token->slots)
    return make_error("name '" + f.name +
                      "' carries a slot count; use slots = " + std::to_string(*token->slots));
  HostEntry host;
  host.name = token->name;
  host.origin = origin;
  if (!f.user.empty()) {
    if (!hosts_detail::is_plain_name(f.user))
      return make_error("bad user '" + f.user + "' (letters, digits, '.', '-', '_')");
    host.user = f.user;
  }
  if (f.port != 0) {
    if (f.port < 1 || f.port > 65535)
      return make_error("bad port " + std::to_string(f.port) + " (expected 1-65535)");
    host.port = static_cast<int>(f.port);
  }
  auto count_ok = [](long long n) { return n >= 1 && n <= slots_limit; };
  if (f.slots && !count_ok(*f.slots))
    return make_error("bad slots " + std::to_string(*f.slots) + " (expected 1-" +
                      std::to_string(slots_limit) + ")");
  if (f.max_slots && !count_ok(*f.max_slots))
    return make_error("bad max_slots " + std::to_string(*f.max_slots) + " (expected 1-" +
                      std::to_string(slots_limit) + ")");
  int slots = f.slots ? static_cast<int>(*f.slots) : default_slots;
  if (f.max_slots) {
    int max = static_cast<int>(*f.max_slots);
    if (!f.slots)
      slots = std::min(slots, max);
    else if (slots > max)
      return make_error("max_slots " + std::to_string(max) + " is less than slots " +
                        std::to_string(slots));
    host.max_slots = max;
  }
  host.slots = slots;
  if (!f.ferryd.empty()) {
    if (!is_safe_ferryd_path(f.ferryd))
      return make_error("bad ferryd '" + f.ferryd +
                        "' (a path of letters, digits, '/', '.', '-', '_', '+')");
    host.ferryd = f.ferryd;
  }
  return host;
}

}  // namespace ferry
