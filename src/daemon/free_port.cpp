// MASTER_PORT's default: a port outside the kernel's ephemeral range, so that the connections
// made on this host between ferryd's pick and the rank's bind (ssh, the job's own, other
// jobs') cannot take it. A port from bind(2) to port 0 is inside that range, and was seen
// taken by an outgoing connection in that window on a busy host.
#include "ferry/daemon/free_port.hpp"

#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <charconv>
#include <random>
#include <vector>

#include "ferry/common/read_text_file.hpp"
#include "ferry/common/text.hpp"
#include "ferry/process/unique_fd.hpp"

namespace ferry {

namespace {

struct PortRange {
  int lo = 0, hi = 0;
};

int number(std::string_view text) {
  text = trim(text);
  int n = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  return ec == std::errc() && end == text.data() + text.size() ? n : -1;
}

std::string proc_text(const char* path) {
  auto text = read_text_file(path, std::size_t{64} * 1024, "sysctl");
  return text ? *text : std::string();
}

// The kernel's ephemeral range (Linux's default when it cannot be read).
PortRange ephemeral_range() {
  const std::string text = proc_text("/proc/sys/net/ipv4/ip_local_port_range");
  const size_t gap = text.find_first_of(" \t");
  if (gap != std::string::npos) {
    const int lo = number(std::string_view(text).substr(0, gap));
    const int hi = number(std::string_view(text).substr(gap));
    if (lo > 0 && lo <= hi && hi <= 65535) return {lo, hi};
  }
  return {32768, 60999};
}

// Binds a socket to `port` on every address (0: the kernel's pick); the port bound, 0 when
// that failed.
uint16_t bind_port(uint16_t port) {
  UniqueFd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = htons(port);
  socklen_t len = sizeof a;
  if (::bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(s.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0)
    return 0;
  return ntohs(a.sin_port);
}

}  // namespace

bool port_is_reserved(uint16_t port, std::string_view reserved) {
  for (const std::string& item : split(trim(reserved), ',')) {
    const size_t dash = item.find('-');
    const int lo = number(std::string_view(item).substr(0, dash));
    const int hi = dash == std::string::npos ? lo : number(std::string_view(item).substr(dash + 1));
    if (lo >= 0 && lo <= port && port <= hi) return true;
  }
  return false;
}

uint16_t find_free_port() {
  const PortRange ephemeral = ephemeral_range();
  // Below the range, above the ports of well-known services (most under 16384); and above it.
  std::vector<PortRange> outside;
  if (const int lo = std::max(16384, ephemeral.lo / 2); lo < ephemeral.lo)
    outside.push_back({lo, ephemeral.lo - 1});
  if (ephemeral.hi < 65535) outside.push_back({ephemeral.hi + 1, 65535});
  int count = 0;
  for (const PortRange& r : outside) count += r.hi - r.lo + 1;
  if (count > 0) {
    const std::string reserved = proc_text("/proc/sys/net/ipv4/ip_local_reserved_ports");
    std::minstd_rand pick(std::random_device{}());
    for (int tries = 0; tries < 64; ++tries) {
      int i = std::uniform_int_distribution<int>(0, count - 1)(pick);
      uint16_t port = 0;
      for (const PortRange& r : outside) {
        if (i <= r.hi - r.lo) {
          port = static_cast<uint16_t>(r.lo + i);
          break;
        }
        i -= r.hi - r.lo + 1;
      }
      if (!port_is_reserved(port, reserved) && bind_port(port) == port) return port;
    }
  }
  return bind_port(0);
}

}  // namespace ferry
