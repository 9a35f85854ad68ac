#pragma once
/// \file
/// This machine's network interfaces and their addresses, as getifaddrs(3) lists them: the
/// one place that walks that list (ferryd's interface report, the local-name check, the
/// connect-back addresses of the Slurm launcher and of direct output routes).

#include <string>
#include <vector>

#include "ferry/common/result.hpp"

namespace ferry {

/// One entry of getifaddrs(3): an interface, and one of its addresses when it is IPv4 or IPv6.
struct InterfaceAddress {
  std::string interface;
  unsigned flags = 0;       ///< the interface's IFF_* flags
  int family = 0;           ///< AF_INET, AF_INET6; anything else (AF_PACKET) has no address
  std::string address;      ///< numeric text ("10.0.0.2", "fd00::2"); empty unless IPv4/6
  int prefix = 0;           ///< netmask length
  bool link_local = false;  ///< IPv6 fe80::/10
};

/// Every entry, in the kernel's order; an Error when getifaddrs(3) fails. A list read less
/// than kInterfaceListFresh ago is answered again: getifaddrs(3) dumps every link with its
/// statistics, which costs a millisecond or more on a machine with hundreds of veth or
/// bridge ports (a Docker or Kubernetes node), and a launch asks once or twice per host.
Result<std::vector<InterfaceAddress>> list_interface_addresses();

/// How long list_interface_addresses() answers from the list it last read (milliseconds).
inline constexpr int kInterfaceListFreshMs = 1000;

/// This machine's IPv4 addresses, loopback ones last: where another host may reach it
/// ({"127.0.0.1"} when the list cannot be read).
std::vector<std::string> own_ipv4_addresses();

}  // namespace ferry
