#include "ferry/frontend/preflight_report.hpp"

#include <array>
#include <string_view>

namespace ferry {
namespace {

bool virtual_interface(const std::string& name) {
  constexpr std::array<std::string_view, 9> kPrefixes = {
      "docker", "br-", "veth", "virbr", "cni", "flannel", "cali", "podman", "lxc"};
  for (std::string_view p : kPrefixes)
    if (name.starts_with(p)) return true;
  return false;
}

std::string endpoint(const std::string& address, uint16_t port) {
  const bool v6 = address.find(':') != std::string::npos;
  return (v6 ? "[" + address + "]" : address) + ":" + std::to_string(port);
}

}  // namespace

std::string preflight_cause(const PreflightFailure& f) {
  const std::string& a = f.address;
  if (a.starts_with("127.") || a == "::1") return "a loopback address, which no other host can use";
  if (a.starts_with("169.254.") || a.starts_with("fe80:"))
    return "a link-local address, which is not routed between networks";
  if (virtual_interface(f.target_interface))
    return "an address of a virtual interface (" + f.target_interface +
           "), private to that host: pick the real network with --network-interface";
  if (a.starts_with("172.17."))
    return "a Docker bridge address, private to that host: use the host's network";
  if (f.reason == "EADDRNOTAVAIL")
    return "the address is not on that host (NAT, or a container's mapped address)";
  if (f.reason == "EADDRINUSE") return "the port is taken on that host";
  if (f.reason == "ETIMEDOUT")
    return "packets are dropped on the way: a firewall, or no route back";
  if (f.reason == "ECONNREFUSED")
    return "a firewall rejecting the port, or another machine answering for that address (NAT)";
  if (f.reason == "EHOSTUNREACH" || f.reason == "ENETUNREACH")
    return "no route between the two hosts";
  return "";
}

std::string preflight_failure_line(const PreflightFailure& f) {
  const std::string where = endpoint(f.address, f.port);
  const std::string on =
      f.target_interface.empty() ? "" : " on " + f.target + "'s " + f.target_interface;
  const std::string peers = "where its ranks listen for their peers: gloo, NCCL, MPI";
  std::string line;
  if (f.peer && f.listening) {
    line = "preflight: " + f.host + " cannot listen on its own address " + f.address +
           (f.target_interface.empty() ? "" : " (" + f.target_interface + ")") + ", " + peers +
           ": " + f.error;
  } else if (f.peer) {
    line = "preflight: " + f.host +
           (f.host_interface.empty() ? "" : " (leaving by " + f.host_interface + ")") +
           " cannot reach " + f.target + " at " + where + " (" + f.target + "'s own address" +
           (f.target_interface.empty() ? "" : " on " + f.target_interface) + ", " + peers +
           "): " + f.error;
  } else if (f.listening) {
    line = "preflight: " + f.host + " cannot listen on " + where + " (MASTER_ADDR" + on +
           "), where the other hosts' ranks would meet its rank 0: " + f.error;
  } else {
    line = "preflight: " + f.host +
           (f.host_interface.empty() ? "" : " (leaving by " + f.host_interface + ")") +
           " cannot reach " + f.target + " at " + where + " (MASTER_ADDR" + on + "): " + f.error;
  }
  const std::string cause = preflight_cause(f);
  if (!cause.empty()) line += "; likely cause: " + cause;
  return line + " (--no-preflight skips this check)";
}

}  // namespace ferry
