#include "ferry/rendezvous/interfaces.hpp"

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>

#include "ferry/common/interface_addresses.hpp"
#include "ferry/common/read_text_file.hpp"

namespace ferry {
namespace {

NetInterface& interface_named(std::vector<NetInterface>& v, const std::string& name) {
  for (auto& i : v)
    if (i.name == name) return i;
  v.push_back(NetInterface{name, false, false, {}});
  return v.back();
}

// A small non-negative number from a sysfs file; -1 when absent or not a number (a veth's
// speed reads "-1" or fails while it is down, a virtual interface's fails with EINVAL). Read
// with read(2): an ifstream's failed read throws inside libstdc++ (caught there), and a
// process's first exception costs the unwinder's search of every object's frame tables.
int sysfs_number(const std::string& path) {
  auto text = read_text_file(path, 64, "sysfs number");
  if (!text) return -1;
  long long v = -1;
  const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
  if (ec != std::errc() || end == text->data() || v < 0 || v > 100'000'000) return -1;
  return static_cast<int>(v);
}

void read_link_facts(NetInterface& ni, const std::string& sysfs_net) {
  const std::string dir = sysfs_net + "/" + ni.name;
  ni.speed_mbps = std::max(sysfs_number(dir + "/speed"), 0);
  ni.infiniband = sysfs_number(dir + "/type") == 32;  // ARPHRD_INFINIBAND
}

}  // namespace

Result<std::vector<NetInterface>> SystemInterfaceReader::read() {
  auto entries = list_interface_addresses();
  if (!entries) return entries.error();
  std::vector<NetInterface> out;
  for (auto& e : *entries) {
    NetInterface& ni = interface_named(out, e.interface);
    ni.up = (e.flags & IFF_UP) && (e.flags & IFF_RUNNING);
    ni.loopback = e.flags & IFF_LOOPBACK;
    if (e.address.empty() || e.link_local) continue;  // AF_PACKET and friends; fe80::/10
    ni.addresses.push_back(IfAddress{e.family == AF_INET6, std::move(e.address), e.prefix});
  }
  for (auto& ni : out) read_link_facts(ni, sysfs_net_);
  return out;
}

std::vector<std::string> interfaces_to_lines(const std::vector<NetInterface>& ifs) {
  std::vector<std::string> lines;
  for (const auto& i : ifs) {
    std::string l = i.name + (i.up ? " up" : " down") + (i.loopback ? " loopback" : "") +
                    (i.infiniband ? " infiniband" : "") +
                    (i.speed_mbps > 0 ? " speed=" + std::to_string(i.speed_mbps) : "");
    for (const auto& a : i.addresses) l += " " + a.address + "/" + std::to_string(a.prefix);
    lines.push_back(std::move(l));
  }
  return lines;
}

Result<std::vector<NetInterface>> interfaces_from_lines(const std::vector<std::string>& lines) {
  std::vector<NetInterface> out;
  for (const auto& line : lines) {
    std::vector<std::string> words;
    std::size_t i = 0;
    while (i < line.size()) {
      auto j = line.find(' ', i);
      if (j == std::string::npos) j = line.size();
      if (j > i) words.push_back(line.substr(i, j - i));
      i = j + 1;
    }
    auto bad = [&] { return make_error("malformed interface line '" + line + "'"); };
    if (words.size() < 2 || (words[1] != "up" && words[1] != "down")) return bad();
    NetInterface ni;
    ni.name = words[0];
    ni.up = words[1] == "up";
    std::size_t w = 2;
    if (w < words.size() && words[w] == "loopback") {
      ni.loopback = true;
      ++w;
    }
    if (w < words.size() && words[w] == "infiniband") {
      ni.infiniband = true;
      ++w;
    }
    if (w < words.size() && words[w].starts_with("speed=")) {
      const std::string v = words[w].substr(6);
      if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos)
        return bad();
      ni.speed_mbps = std::stoi(v);
      ++w;
    }
    for (; w < words.size(); ++w) {
      auto slash = words[w].find('/');
      if (slash == std::string::npos) return bad();
      IfAddress a;
      a.address = words[w].substr(0, slash);
      uint8_t bytes[16];
      if (!parse_ip(a.address, a.ipv6, bytes)) return bad();
      const std::string p = words[w].substr(slash + 1);
      if (p.empty() || p.size() > 3 || p.find_first_not_of("0123456789") != std::string::npos)
        return bad();
      a.prefix = std::stoi(p);
      if (a.prefix > (a.ipv6 ? 128 : 32)) return bad();
      ni.addresses.push_back(std::move(a));
    }
    out.push_back(std::move(ni));
  }
  return out;
}

bool parse_ip(std::string_view text, bool& ipv6, uint8_t (&bytes)[16]) {
  std::string s(text);
  std::memset(bytes, 0, sizeof bytes);
  if (::inet_pton(AF_INET, s.c_str(), bytes + 12) == 1) {
    ipv6 = false;
    return true;
  }
  if (::inet_pton(AF_INET6, s.c_str(), bytes) == 1) {
    ipv6 = true;
    return true;
  }
  return false;
}

bool same_subnet(const IfAddress& a, const IfAddress& b, int prefix) {
  bool v6a = false, v6b = false;
  uint8_t x[16], y[16];
  if (!parse_ip(a.address, v6a, x) || !parse_ip(b.address, v6b, y) || v6a != v6b) return false;
  int bits = v6a ? prefix : prefix + 96;  // IPv4 lives in the last 32 bits
  if (prefix < 0 || bits > 128) return false;
  for (int i = 0; i < 16 && bits > 0; ++i, bits -= 8) {
    uint8_t mask = bits >= 8 ? 0xff : static_cast<uint8_t>(0xff << (8 - bits));
    if ((x[i] & mask) != (y[i] & mask)) return false;
  }
  return true;
}

}  // namespace ferry
