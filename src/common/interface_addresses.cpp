#include "ferry/common/interface_addresses.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <bit>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>

namespace ferry {
namespace {

struct IfaddrsFree {
  void operator()(ifaddrs* list) const { ::freeifaddrs(list); }
};
// Owns getifaddrs()'s list, so every return frees it.
using IfaddrsPtr = std::unique_ptr<ifaddrs, IfaddrsFree>;

int prefix_of(const sockaddr* mask) {
  if (!mask) return 0;
  const uint8_t* b = nullptr;
  int n = 0;
  if (mask->sa_family == AF_INET) {
    b = reinterpret_cast<const uint8_t*>(&reinterpret_cast<const sockaddr_in*>(mask)->sin_addr);
    n = 4;
  } else if (mask->sa_family == AF_INET6) {
    b = reinterpret_cast<const uint8_t*>(&reinterpret_cast<const sockaddr_in6*>(mask)->sin6_addr);
    n = 16;
  }
  int bits = 0;
  for (int i = 0; i < n; ++i) bits += std::popcount(static_cast<unsigned>(b[i]));
  return bits;
}

Result<std::vector<InterfaceAddress>> read_interface_addresses() {
  ifaddrs* raw = nullptr;
  if (::getifaddrs(&raw) != 0)
    return make_error(std::string("getifaddrs: ") + std::strerror(errno));
  const IfaddrsPtr list(raw);
  std::vector<InterfaceAddress> out;
  for (ifaddrs* a = list.get(); a; a = a->ifa_next) {
    if (!a->ifa_name) continue;
    InterfaceAddress e;
    e.interface = a->ifa_name;
    e.flags = a->ifa_flags;
    if (a->ifa_addr) e.family = a->ifa_addr->sa_family;
    char text[INET6_ADDRSTRLEN] = {};
    if (e.family == AF_INET) {
      ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, text,
                  sizeof text);
    } else if (e.family == AF_INET6) {
      auto* in6 = reinterpret_cast<sockaddr_in6*>(a->ifa_addr);
      e.link_local = IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr);
      ::inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
    }
    e.address = text;
    if (!e.address.empty()) e.prefix = prefix_of(a->ifa_netmask);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace

Result<std::vector<InterfaceAddress>> list_interface_addresses() {
  using Clock = std::chrono::steady_clock;
  static std::mutex mutex;
  static std::optional<std::vector<InterfaceAddress>> last;
  static Clock::time_point read_at;
  const std::lock_guard<std::mutex> lock(mutex);
  const auto now = Clock::now();
  if (last && now - read_at < std::chrono::milliseconds(kInterfaceListFreshMs)) return *last;
  auto fresh = read_interface_addresses();
  if (!fresh) return fresh;  // an error is not kept: the next call tries again
  last = *fresh;
  read_at = now;
  return fresh;
}

std::vector<std::string> own_ipv4_addresses() {
  auto entries = list_interface_addresses();
  if (!entries) return {"127.0.0.1"};
  std::vector<std::string> out, loop;
  for (const auto& e : *entries) {
    if (e.family != AF_INET) continue;
    (e.address.starts_with("127.") ? loop : out).push_back(e.address);
  }
  out.insert(out.end(), loop.begin(), loop.end());
  return out;
}

}  // namespace ferry
