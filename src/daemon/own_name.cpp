#include "ferry/daemon/own_name.hpp"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <memory>

#include "ferry/common/environ.hpp"
#include "ferry/common/posix_handles.hpp"
#include "ferry/common/text.hpp"

namespace ferry {
namespace {

std::string numeric_address(const addrinfo& a) {
  char buf[NI_MAXHOST] = {};
  if (::getnameinfo(a.ai_addr, a.ai_addrlen, buf, sizeof buf, nullptr, 0, NI_NUMERICHOST) != 0)
    return "?";
  return buf;
}

const char kNeed[] = "Horovod's gloo needs this host's name to resolve to one of its addresses";

}  // namespace

std::string own_host_name() {
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

bool uses_horovod_gloo(const std::vector<std::string>& env) {
  if (!env_value(env, "HOROVOD_GLOO_RENDEZVOUS_ADDR")) return false;
  auto controller = env_value(env, "HOROVOD_CONTROLLER");
  return !controller || controller->empty() || lower(*controller) == "gloo";
}

Status check_own_name(const std::string& name) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(name.c_str(), nullptr, &hints, &found);
  if (rc != 0)
    return make_error(std::string(kNeed) + ", but '" + name + "' does not resolve here (" +
                      ::gai_strerror(rc) + "): add it to /etc/hosts on " + name);
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, ::freeaddrinfo);
  std::vector<std::string> others;
  for (const addrinfo* a = list.get(); a; a = a->ai_next) {
    UniqueFd s(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (s && ::bind(s.get(), a->ai_addr, a->ai_addrlen) == 0) return {};
    std::string addr = numeric_address(*a);
    if (std::find(others.begin(), others.end(), addr) == others.end())
      others.push_back(std::move(addr));
  }
  std::string listed;
  for (const auto& addr : others) listed += (listed.empty() ? "" : ", ") + addr;
  return make_error(std::string(kNeed) + ", but '" + name + "' resolves here to " + listed +
                    ", not an address of this host: fix /etc/hosts (or DNS) on " + name);
}

}  // namespace ferry
