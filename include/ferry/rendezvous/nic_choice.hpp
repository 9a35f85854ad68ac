#pragma once
/// \file
/// Which network interface the frameworks' data planes (NCCL, gloo, HCCL, tensorpipe, MPI)
/// should use on each host, and the rank-0 host's address for MASTER_ADDR. A pure function
/// over what each ferryd reported (its interfaces) and the address the front end reached
/// each host at.
///
/// The rule: pick on every host one interface such that all the chosen addresses lie in one
/// IP subnet (mutually reachable without a router), preferring on each host the interface
/// that holds the address the front end reached it at, IPv4 over IPv6, and equal names.
/// `lo`, `docker*`, `veth*`, `virbr*`, `br-*` and interfaces that are down are left out,
/// except that a job whose hosts are all this machine (or that has one host) uses `lo`.
/// With no common subnet, hosts reached directly (not through a port mapping) keep the
/// interface they were reached on (a routed network); otherwise there is no choice, and a
/// warning says what to do.

#include <optional>
#include <string>
#include <vector>

#include "ferry/rendezvous/interfaces.hpp"

namespace ferry {

/// What is known about one host's network.
struct HostNetwork {
  std::string label;       ///< the host's name in messages
  std::string reached_at;  ///< address the front end connected to; "" = local ferryd (pipes)
  std::vector<NetInterface> interfaces;
};

/// --network-interface in NCCL_SOCKET_IFNAME's syntax: a comma list of name prefixes (`eth`;
/// an interface of exactly that name is preferred), `=` first for exact names (`=eth0`), `^`
/// first to exclude (`^docker,lo`; `^=` exact). An item that is a subnet, as Open MPI's
/// btl_tcp_if_include and _exclude take them (`10.1.0.0/16`, `fd00::/64`), names the
/// interface holding an address in it.
struct InterfaceSpec {
  bool exclude = false;
  bool exact = false;
  std::vector<std::string> names;
  /// Whether interface `name` is one of `names` (exactly, or by prefix).
  bool matches(const std::string& name) const;
  /// The same, and a subnet item matches an interface with an address in that subnet.
  bool matches(const NetInterface& ni) const;
  /// Whether an item is a subnet (NCCL and HCCL cannot read the list then).
  bool has_subnet() const;
};

/// A subnet item ("10.1.0.0/16"): its network address and prefix length; nothing when
/// `text` is not one.
std::optional<IfAddress> parse_subnet(const std::string& text);

/// The first of `ni`'s addresses inside `subnet`, or null.
const IfAddress* address_in(const NetInterface& ni, const IfAddress& subnet);
InterfaceSpec parse_interface_spec(const std::string& text);

struct NicOptions {
  /// --network-interface, NCCL's syntax (InterfaceSpec); each host uses the first interface
  /// it has that matches, in the list's order. "" = choose.
  std::string interface;
  /// Interface names (or subnets, InterfaceSpec) never chosen automatically (Open MPI's
  /// btl/oob_tcp_if_exclude), besides the virtual ones that never are (is_excluded_interface()).
  std::vector<std::string> exclude{};
};

/// The outcome. When `chosen` is false the frameworks are left to their own defaults and
/// `warning` says why and what the user can do.
struct NicChoice {
  bool chosen = false;
  std::vector<std::string> iface;    ///< per host (same order as the input): interface name
  std::vector<std::string> address;  ///< per host: its address on that interface ("" unknown)
  std::string warning;               ///< for the user; empty when all is well
  /// The user's --network-interface where NCCL and HCCL take it as it is (a prefix or an
  /// exclusion): their variables get it unchanged; "" = "=<chosen name>" per host.
  std::string nccl_spec;
  std::vector<std::string> explanation;  ///< for --verbose, one line each
};

/// Chooses as described in the file comment. `hosts` in placement order (host 0 runs
/// rank 0).
NicChoice choose_network_interface(const std::vector<HostNetwork>& hosts,
                                   const NicOptions& options);

/// MASTER_ADDR: rank 0's host address on the chosen interface, else `fallback` (the address
/// the front end reached that host at).
std::string master_address(const NicChoice& choice, const std::string& fallback);

/// Whether `name` is left out of the automatic choice (virtual/bridge/loopback).
bool is_excluded_interface(const NetInterface& ni);

}  // namespace ferry
