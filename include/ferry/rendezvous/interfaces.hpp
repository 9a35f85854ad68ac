#pragma once
/// \file
/// A host's network interfaces and their addresses (what ferryd reports so the front end
/// can choose the NIC frameworks should use), read with getifaddrs(3) behind an interface.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ferry/common/result.hpp"

namespace ferry {

/// One address of an interface: numeric text ("10.0.0.2", "fd00::2") and prefix length.
struct IfAddress {
  bool ipv6 = false;
  std::string address;
  int prefix = 0;
  bool operator==(const IfAddress&) const = default;
};

/// One interface with its IPv4/IPv6 addresses.
struct NetInterface {
  std::string name;
  bool up = false;        ///< IFF_UP and IFF_RUNNING
  bool loopback = false;  ///< IFF_LOOPBACK
  std::vector<IfAddress> addresses;
  bool infiniband = false;  ///< an IPoIB interface (sysfs type 32, ARPHRD_INFINIBAND)
  int speed_mbps = 0;       ///< link speed from sysfs; 0 unknown (virtual, down)
  bool operator==(const NetInterface&) const = default;
};

/// Reads the interfaces of the machine it runs on.
class InterfaceReader {
 public:
  virtual ~InterfaceReader() = default;
  virtual Result<std::vector<NetInterface>> read() = 0;
};

/// InterfaceReader over getifaddrs(3), in the kernel's order. IPv6 link-local addresses
/// (fe80::/10) are left out: they need a scope id and frameworks cannot use them across hosts.
/// Speed and type come from /sys/class/net/NAME/{speed,type} (FERRY_TEST_SYSFS_NET instead of
/// /sys/class/net: tests give a host fake speeds).
class SystemInterfaceReader : public InterfaceReader {
 public:
  /// `sysfs_net`: where the interfaces' speed and type files are (Settings::sysfs_net).
  explicit SystemInterfaceReader(std::string sysfs_net = "/sys/class/net")
      : sysfs_net_(std::move(sysfs_net)) {}
  Result<std::vector<NetInterface>> read() override;

 private:
  std::string sysfs_net_;
};

/// Lines for the wire (a string list in ferryd's hello), one per interface:
/// `NAME up|down [loopback] [infiniband] [speed=MBPS] ADDR/PREFIX ...`, e.g.
/// "eth0 up speed=10000 10.0.0.2/24 fd00::2/64".
std::vector<std::string> interfaces_to_lines(const std::vector<NetInterface>& ifs);
/// Parses interfaces_to_lines() output; an Error names the first bad line.
Result<std::vector<NetInterface>> interfaces_from_lines(const std::vector<std::string>& lines);

/// Parses "a.b.c.d" or an IPv6 address into 16 bytes (IPv4 in the last four, ipv6 false).
/// False if it is neither.
bool parse_ip(std::string_view text, bool& ipv6, uint8_t (&bytes)[16]);

/// Whether `a` and `b` fall in the same `prefix`-bit network (both of one family).
bool same_subnet(const IfAddress& a, const IfAddress& b, int prefix);

}  // namespace ferry
