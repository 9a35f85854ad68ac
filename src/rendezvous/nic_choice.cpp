#include "ferry/rendezvous/nic_choice.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <optional>
#include <set>
#include <tuple>

namespace ferry {
namespace {

struct Candidate {
  const NetInterface* ni;
  const IfAddress* addr;
};

bool is_loopback_address(const std::string& a) {
  return a.starts_with("127.") || a == "::1" || a.starts_with("::ffff:127.");
}

std::string network_of(const IfAddress& a) {
  bool v6 = false;
  uint8_t b[16];
  if (!parse_ip(a.address, v6, b)) return a.address + "/" + std::to_string(a.prefix);
  int bits = v6 ? a.prefix : a.prefix + 96;
  for (int i = 0; i < 16; ++i, bits -= 8) {
    if (bits >= 8) continue;
    b[i] &= bits <= 0 ? 0 : static_cast<uint8_t>(0xff << (8 - bits));
  }
  char text[INET6_ADDRSTRLEN] = {};
  ::inet_ntop(v6 ? AF_INET6 : AF_INET, v6 ? b : b + 12, text, sizeof text);
  return std::string(text) + "/" + std::to_string(a.prefix);
}

// Docker's default bridge: every standalone Docker host gives its containers addresses in
// it, so two hosts "sharing" it are usually two unconnected private networks.
bool in_docker_default_bridge(const IfAddress& a) {
  return !a.ipv6 && same_subnet(a, IfAddress{false, "172.17.0.0", 16}, 16);
}

std::vector<Candidate> usable(const HostNetwork& h) {
  std::vector<Candidate> out;
  for (const auto& ni : h.interfaces) {
    if (!ni.up || is_excluded_interface(ni)) continue;
    for (const auto& a : ni.addresses) out.push_back({&ni, &a});
  }
  return out;
}

// The usable interface holding the address the front end reached the host at.
const NetInterface* anchor_of(const HostNetwork& h) {
  if (h.reached_at.empty()) return nullptr;
  for (const auto& c : usable(h))
    if (c.addr->address == h.reached_at) return c.ni;
  return nullptr;
}

// Reached through an address that is none of the host's own: port mapping / NAT.
bool behind_nat(const HostNetwork& h) {
  if (h.reached_at.empty() || is_loopback_address(h.reached_at)) return false;
  for (const auto& ni : h.interfaces)
    for (const auto& a : ni.addresses)
      if (a.address == h.reached_at) return false;
  return true;
}

std::string describe(const HostNetwork& h) {
  std::string s = h.label + ":";
  bool any = false;
  for (const auto& ni : h.interfaces) {
    if (ni.loopback || ni.addresses.empty()) continue;
    s += " " + ni.name + (ni.up ? "" : "(down)");
    for (const auto& a : ni.addresses) s += " " + a.address + "/" + std::to_string(a.prefix);
    s += ";";
    any = true;
  }
  if (!any) s += " no addresses besides loopback;";
  if (h.reached_at.empty())
    s += " this machine";
  else
    s += " reached at " + h.reached_at;
  if (behind_nat(h)) s += ", which is not one of its addresses (a port-mapped container?)";
  return s;
}

std::set<std::string> address_set(const HostNetwork& h) {
  std::set<std::string> s;
  for (const auto& ni : h.interfaces)
    for (const auto& a : ni.addresses) s.insert(ni.name + " " + a.address);
  return s;
}

const IfAddress* preferred_address(const NetInterface& ni) {
  for (const auto& a : ni.addresses)
    if (!a.ipv6) return &a;
  return ni.addresses.empty() ? nullptr : &ni.addresses.front();
}

NicChoice loopback_choice(std::size_t n, const std::string& why) {
  NicChoice c;
  c.chosen = true;
  c.iface.assign(n, "lo");
  c.address.assign(n, "127.0.0.1");
  c.explanation.push_back("network: using lo (" + why + ")");
  return c;
}

// An interface `spec` names, and its address to use.
struct Named {
  const NetInterface* ni = nullptr;
  const IfAddress* addr = nullptr;
};

// The interface of `h` that `spec` names: for each of its items in order, the interface with an
// address in it (a subnet), or of that name, else (unless `=`) the first whose name starts
// with it. `prefix` says whether the pick was by prefix. Null: none.
Named named_interface(const HostNetwork& h, const InterfaceSpec& spec, bool& prefix) {
  for (const auto& n : spec.names) {
    if (auto net = parse_subnet(n)) {
      for (const auto& ni : h.interfaces)
        if (const IfAddress* a = address_in(ni, *net)) return {&ni, a};
      continue;
    }
    for (const auto& ni : h.interfaces)
      if (ni.name == n) return {&ni, preferred_address(ni)};
    if (spec.exact) continue;
    for (const auto& ni : h.interfaces)
      if (ni.name.starts_with(n)) {
        prefix = true;
        return {&ni, preferred_address(ni)};
      }
  }
  return {};
}

NicChoice user_choice(const std::vector<HostNetwork>& hosts, const std::string& text) {
  const InterfaceSpec spec = parse_interface_spec(text);
  NicChoice c;
  c.chosen = true;
  bool prefix = false;
  for (const auto& h : hosts) {
    const auto [found, a] = named_interface(h, spec, prefix);
    if (!found) {
      c.iface.push_back(spec.names.empty() ? text : spec.names.front());
      c.address.emplace_back();
      c.warning += (c.warning.empty() ? "" : "\n") + std::string("--network-interface ") + text +
                   ": host " + h.label + " has no such interface (" + describe(h) + ")";
      continue;
    }
    c.iface.push_back(found->name);
    c.address.push_back(a ? a->address : "");
    c.explanation.push_back("network: " + h.label + ": " + found->name +
                            (a ? " " + a->address : std::string(" (no address)")) +
                            " (--network-interface " + text + ")");
  }
  // NCCL and HCCL read the same syntax: a prefix goes to them as the user wrote it (not a
  // list with a subnet, which they would read as a name).
  if (prefix && !spec.has_subnet()) c.nccl_spec = text;
  return c;
}

// Tries to extend `seed` (an address of host 0) to one address per host, all in one subnet.
// Returns the picks, or nothing.
std::optional<std::vector<Candidate>> extend(const std::vector<HostNetwork>& hosts,
                                             const Candidate& seed) {
  std::vector<Candidate> picks{seed};
  for (std::size_t h = 1; h < hosts.size(); ++h) {
    const NetInterface* anchor = anchor_of(hosts[h]);
    std::optional<Candidate> best;
    int best_rank = -1;
    for (const auto& c : usable(hosts[h])) {
      bool fits = true;
      for (const auto& p : picks)
        fits = fits && c.addr->ipv6 == p.addr->ipv6 && c.addr->address != p.addr->address &&
               same_subnet(*c.addr, *p.addr, std::min(c.addr->prefix, p.addr->prefix));
      if (!fits) continue;
      int rank = (c.ni == anchor ? 2 : 0) + (c.ni->name == seed.ni->name ? 1 : 0);
      if (rank > best_rank) {
        best = c;
        best_rank = rank;
      }
    }
    if (!best) return std::nullopt;
    picks.push_back(*best);
  }
  return picks;
}

// What a set of picks is worth: a network whose every pick is InfiniBand first, then the
// slowest link's speed (0 when a host's is unknown), then the old rule: the subnet most hosts
// were reached through, IPv4, the same name everywhere.
struct PickScore {
  int infiniband = 0;
  int speed = 0;
  int reach = 0;
  bool operator>(const PickScore& o) const {
    return std::tie(infiniband, speed, reach) > std::tie(o.infiniband, o.speed, o.reach);
  }
};

PickScore score_of(const std::vector<HostNetwork>& hosts, const std::vector<Candidate>& picks) {
  PickScore s;
  bool all_ib = true, same_names = true;
  int anchors = 0, slowest = -1;
  for (std::size_t h = 0; h < hosts.size(); ++h) {
    anchors += picks[h].ni == anchor_of(hosts[h]);
    same_names = same_names && picks[h].ni->name == picks[0].ni->name;
    all_ib = all_ib && picks[h].ni->infiniband;
    slowest = slowest < 0 ? picks[h].ni->speed_mbps : std::min(slowest, picks[h].ni->speed_mbps);
  }
  s.infiniband = all_ib ? 1 : 0;
  s.speed = std::max(slowest, 0);
  s.reach = anchors * 100 + (picks[0].addr->ipv6 ? 0 : 10) + (same_names ? 5 : 0);
  return s;
}

std::string speed_text(const PickScore& s) {
  if (s.infiniband) return "InfiniBand";
  return s.speed > 0 ? std::to_string(s.speed) + " Mb/s" : "speed unknown";
}

// The interfaces, one per host, of the subnet every host has an address in; where several
// are, the fastest (PickScore). `rejected_note` says why a candidate was dropped; `preferred`
// why a faster network won over the one the hosts were reached on ("" when it did not).
std::optional<std::vector<Candidate>> best_common_subnet(const std::vector<HostNetwork>& hosts,
                                                         std::string& rejected_note,
                                                         std::string& preferred) {
  const std::size_t n = hosts.size();
  std::optional<std::vector<Candidate>> best, by_reach;
  PickScore best_score{-1, -1, -1};
  PickScore reach_score{-1, -1, -1};
  for (const auto& seed : usable(hosts.front())) {
    auto picks = extend(hosts, seed);
    if (!picks) continue;
    // Port-mapped hosts reached at different addresses that "share" Docker's default
    // bridge subnet are separate machines with separate private bridges.
    std::set<std::string> nat_fronts;
    for (std::size_t h = 0; h < n; ++h)
      if (behind_nat(hosts[h])) nat_fronts.insert(hosts[h].reached_at);
    if (nat_fronts.size() >= 2 && in_docker_default_bridge(*seed.addr)) {
      rejected_note = network_of(*seed.addr) +
                      " is Docker's default bridge on each machine, not one shared network";
      continue;
    }
    const PickScore score = score_of(hosts, *picks);
    if (score.reach > reach_score.reach) {
      by_reach = picks;
      reach_score = score;
    }
    if (score > best_score) {
      best = std::move(picks);
      best_score = score;
    }
  }
  if (best && by_reach && (*best)[0].ni != (*by_reach)[0].ni)
    preferred = "network: preferred " + network_of(*(*best)[0].addr) + " (" +
                speed_text(best_score) + ") over " + network_of(*(*by_reach)[0].addr) + " (" +
                speed_text(reach_score) + "), the network ferryrun reached the hosts on";
  return best;
}

// Without a common subnet: the interfaces ferryrun reached each host on, when every host was
// reached directly at one of its own addresses (IP routing joins them). False otherwise.
bool routed_choice(const std::vector<HostNetwork>& hosts, NicChoice& c) {
  const std::size_t n = hosts.size();
  bool all_anchored = true;
  for (const auto& h : hosts) all_anchored = all_anchored && anchor_of(h) != nullptr;
  if (!all_anchored) return false;
  c.chosen = true;
  std::string names;
  for (std::size_t h = 0; h < n; ++h) {
    const NetInterface* a = anchor_of(hosts[h]);
    c.iface.push_back(a->name);
    c.address.push_back(hosts[h].reached_at);
    names += (h ? ", " : "") + a->name + " on " + hosts[h].label;
  }
  c.explanation.push_back(
      "network: no subnet is common to all hosts; chose the interfaces "
      "ferryrun reached them on (" +
      names + "), relying on IP routing");
  return true;
}

}  // namespace

InterfaceSpec parse_interface_spec(const std::string& text) {
  InterfaceSpec spec;
  std::string_view rest = text;
  if (rest.starts_with("^")) {
    spec.exclude = true;
    rest.remove_prefix(1);
  }
  if (rest.starts_with("=")) {
    spec.exact = true;
    rest.remove_prefix(1);
  }
  for (std::size_t i = 0; i <= rest.size();) {
    auto j = std::min(rest.find(',', i), rest.size());
    if (j > i) spec.names.emplace_back(rest.substr(i, j - i));
    i = j + 1;
  }
  return spec;
}

bool InterfaceSpec::matches(const std::string& name) const {
  return std::any_of(names.begin(), names.end(),
                     [&](const std::string& n) { return exact ? name == n : name.starts_with(n); });
}

bool InterfaceSpec::matches(const NetInterface& ni) const {
  return std::any_of(names.begin(), names.end(), [&](const std::string& n) {
    if (auto net = parse_subnet(n)) return address_in(ni, *net) != nullptr;
    return exact ? ni.name == n : ni.name.starts_with(n);
  });
}

bool InterfaceSpec::has_subnet() const {
  return std::any_of(names.begin(), names.end(),
                     [](const std::string& n) { return parse_subnet(n).has_value(); });
}

std::optional<IfAddress> parse_subnet(const std::string& text) {
  const auto slash = text.find('/');
  if (slash == std::string::npos) return std::nullopt;
  IfAddress net;
  net.address = text.substr(0, slash);
  uint8_t bytes[16];
  if (!parse_ip(net.address, net.ipv6, bytes)) return std::nullopt;
  const std::string_view bits = std::string_view(text).substr(slash + 1);
  const auto [end, ec] = std::from_chars(bits.data(), bits.data() + bits.size(), net.prefix);
  if (ec != std::errc() || end != bits.data() + bits.size() || net.prefix < 0 ||
      net.prefix > (net.ipv6 ? 128 : 32))
    return std::nullopt;
  return net;
}

const IfAddress* address_in(const NetInterface& ni, const IfAddress& subnet) {
  for (const auto& a : ni.addresses)
    if (a.ipv6 == subnet.ipv6 && same_subnet(a, subnet, subnet.prefix)) return &a;
  return nullptr;
}

bool is_excluded_interface(const NetInterface& ni) {
  const std::string& n = ni.name;
  return ni.loopback || n == "lo" || n.starts_with("docker") || n.starts_with("veth") ||
         n.starts_with("virbr") || n.starts_with("br-");
}

NicChoice choose_network_interface(const std::vector<HostNetwork>& hosts,
                                   const NicOptions& options) {
  if (!options.exclude.empty() && options.interface.empty()) {
    // The choice below, among the interfaces left.
    InterfaceSpec excluded;
    excluded.exact = true;
    excluded.names = options.exclude;
    std::vector<HostNetwork> kept = hosts;
    for (auto& h : kept)
      std::erase_if(h.interfaces, [&](const NetInterface& ni) { return excluded.matches(ni); });
    return choose_network_interface(kept, NicOptions{});
  }
  const std::size_t n = hosts.size();
  if (n == 0) return {};
  if (options.interface.starts_with("^")) {
    // NCCL's exclusions: the automatic choice among the interfaces left; NCCL and HCCL get
    // the user's string as it is.
    const InterfaceSpec spec = parse_interface_spec(options.interface);
    std::vector<HostNetwork> kept = hosts;
    for (auto& h : kept)
      std::erase_if(h.interfaces, [&](const NetInterface& ni) { return spec.matches(ni); });
    NicChoice c = choose_network_interface(kept, NicOptions{"", options.exclude});
    if (!spec.has_subnet()) c.nccl_spec = options.interface;
    return c;
  }
  if (!options.interface.empty()) return user_choice(hosts, options.interface);
  if (n == 1) return loopback_choice(n, "a single host: ranks talk only among themselves");
  bool all_local = std::all_of(hosts.begin(), hosts.end(),
                               [](const HostNetwork& h) { return h.reached_at.empty(); });
  if (all_local) return loopback_choice(n, "every host is this machine");
  // Identical address lists, each host reached directly: one network stack reached several
  // times (ssh to localhost). Port-mapped containers on two machines may well have identical
  // private addresses, so hosts behind a port mapping never count as one machine.
  const auto first_set = address_set(hosts.front());
  bool any_nat = std::any_of(hosts.begin(), hosts.end(), behind_nat);
  if (!first_set.empty() && !any_nat &&
      std::all_of(hosts.begin() + 1, hosts.end(),
                  [&](const HostNetwork& h) { return address_set(h) == first_set; }))
    return loopback_choice(n, "every host reports the same addresses: one machine");

  NicChoice c;
  for (const auto& h : hosts) c.explanation.push_back("network: " + describe(h));

  std::string rejected_note, preferred;
  std::optional<std::vector<Candidate>> best = best_common_subnet(hosts, rejected_note, preferred);
  if (!preferred.empty()) c.explanation.push_back(preferred);
  if (best) {
    c.chosen = true;
    std::string names;
    for (std::size_t h = 0; h < n; ++h) {
      c.iface.push_back((*best)[h].ni->name);
      c.address.push_back((*best)[h].addr->address);
      names += (h ? ", " : "") + (*best)[h].ni->name + " on " + hosts[h].label;
    }
    c.explanation.push_back("network: chose " + names + ": every host has an address in " +
                            network_of(*(*best)[0].addr));
    return c;
  }

  // No common subnet. Hosts that were reached directly at one of their own addresses can
  // presumably reach each other the same (routed) way.
  if (routed_choice(hosts, c)) return c;

  c.warning =
      "no network interface connects all hosts, so NCCL/gloo/MPI traffic between "
      "hosts will probably fail";
  if (!rejected_note.empty()) c.warning += " (" + rejected_note + ")";
  c.warning += ":";
  for (const auto& h : hosts) c.warning += "\n  " + describe(h);
  c.warning +=
      "\nWhat to do: run the containers with host networking (docker run --network=host), "
      "or attach them to one overlay or macvlan network that spans the hosts, or name the "
      "interface that connects them with --network-interface NAME.";
  c.explanation.emplace_back(
      "network: no common interface; NCCL/GLOO/HCCL interface variables "
      "are not set");
  return c;
}

std::string master_address(const NicChoice& choice, const std::string& fallback) {
  if (choice.chosen && !choice.address.empty() && !choice.address.front().empty())
    return choice.address.front();
  return fallback;
}

}  // namespace ferry
