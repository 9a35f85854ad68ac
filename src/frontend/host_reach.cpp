#include "ferry/frontend/host_reach.hpp"

#include <arpa/inet.h>

#include "ferry/transport/local_launcher.hpp"

namespace ferry {
namespace {

bool is_address(const std::string& name) {
  in6_addr a{};
  return ::inet_pton(AF_INET, name.c_str(), &a) == 1 ||
         ::inet_pton(AF_INET6, name.c_str(), &a) == 1;
}

}  // namespace

HostReach decide_host_reach(const HostEntry& host, bool this_machine, const SshDefaults& defaults) {
  if (!this_machine) return {false, "not a name or address of this machine"};
  std::string own;
  if (host.port > 0) own = "port " + std::to_string(host.port);
  if (!host.user.empty()) own += (own.empty() ? "user " : " and user ") + host.user;
  if (!own.empty()) {
    // Docker's published ports: 127.0.0.1:2201 is a container's sshd, not this machine.
    return {false, std::string(is_address(host.name) ? "local address" : "local name") +
                       ", but the entry names its own " + own};
  }
  // -p / -l are for the remote hosts of a mixed job; they never turn this machine into SSH.
  std::string global;
  if (defaults.port > 0) global = "port " + std::to_string(defaults.port);
  if (!defaults.user.empty()) global += (global.empty() ? "user " : " and user ") + defaults.user;
  if (global.empty()) return {true, "this machine"};
  return {true, "this machine; the global SSH " + global +
                    (defaults.port > 0 && !defaults.user.empty() ? " do" : " does") +
                    " not apply to it"};
}

HostReach decide_host_reach(const HostEntry& host, const SshDefaults& defaults) {
  return decide_host_reach(host, is_local_host(host.name), defaults);
}

}  // namespace ferry
