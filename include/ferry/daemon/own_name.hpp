#pragma once
/// \file
/// Horovod's gloo finds the address it listens on by looking up the host's own name
/// (gethostname), even when HOROVOD_GLOO_IFACE names an interface. If the name does not
/// resolve, or resolves only to other machines' addresses, every Horovod rank on the host
/// fails: "Unable to find address for: NAME", or a crash inside gloo. ferryd checks the
/// name before it starts such ranks, so that the job fails with the cause instead.

#include <string>
#include <vector>

#include "ferry/common/result.hpp"

namespace ferry {

/// Whether ranks with this environment ("K=V") start Horovod's gloo controller when they
/// call hvd.init(): HOROVOD_GLOO_RENDEZVOUS_ADDR is set and HOROVOD_CONTROLLER is gloo
/// (any case) or unset.
bool uses_horovod_gloo(const std::vector<std::string>& env);

/// Looks `name` up as gloo does (getaddrinfo, any family, stream sockets) and succeeds if
/// a socket can bind one of its addresses here. Otherwise one line naming `name`, what
/// went wrong, and the file to fix. May wait for DNS when the name is not in /etc/hosts.
Status check_own_name(const std::string& name);

/// This host's name (gethostname), as ferryd names its host in Hello and its lines.
std::string own_host_name();

}  // namespace ferry
