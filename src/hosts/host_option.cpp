// `-H` / `--host`: a comma-separated list of host tokens, as mpirun and horovodrun take it.

#include <string>
#include <string_view>

#include "ferry/common/text.hpp"
#include "ferry/hosts/host_list.hpp"
#include "host_token.hpp"

namespace ferry {

Result<HostList> parse_host_option(const std::string& text, int default_slots) {
  using hosts_detail::split_host_token;

  if (default_slots < 1) {
    return make_error("-H: default slot count must be positive (got " +
                      std::to_string(default_slots) + ")");
  }
  if (trim(text).empty()) return make_error("-H: no hosts given");

  HostList items;
  std::string_view rest = text;
  while (true) {
    auto comma = rest.find(',');
    std::string_view item = trim(rest.substr(0, comma));
    if (item.empty()) {
      return make_error("-H: empty host in '" + text +
                        "' (two commas in a row or a comma at either end)");
    }
    for (char c : item) {
      if (is_space(c)) {
        return make_error("-H: space inside '" + std::string(item) +
                          "' (separate hosts with commas)");
      }
    }
    auto token = split_host_token(item);
    if (!token) return make_error("-H: " + token.error().message);

    HostEntry host;
    host.name = std::move(token->name);
    host.user = std::move(token->user);
    host.slots = token->slots.value_or(default_slots);
    host.origin = "-H";
    items.push_back(std::move(host));

    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }

  // Open MPI reads `-H a,a,b` as two slots on a: repeats add up.
  HostList hosts;
  merge_hosts(hosts, items);
  return hosts;
}

}  // namespace ferry
