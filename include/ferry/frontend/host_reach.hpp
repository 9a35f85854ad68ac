#pragma once
/// \file
/// Whether the front end starts a host's ferryd itself (fork/exec, no SSH) or over SSH.

#include <string>

#include "ferry/hosts/host_list.hpp"

namespace ferry {

/// The SSH settings that apply to every host whose entry names none (-p/--ssh-port,
/// -l/--ssh-user, the job file's `[defaults] port`/`user`).
struct SshDefaults {
  int port = 0;      ///< 0: none given
  std::string user;  ///< "": none given
};

/// How one host is reached, and why (for --verbose).
struct HostReach {
  bool local = false;  ///< started on this machine by fork/exec; else over SSH
  std::string reason;  ///< "this machine", "local address, but the entry names its own port 2201"
};

/// Decides how `host` is reached. `this_machine` is whether its name denotes this machine
/// (is_local_host). Such a host is reached over SSH only when its own entry names a port or
/// a user: that is a container behind a published port, or a deliberate login. The global
/// `defaults` never change the choice; they only show up in the reason.
HostReach decide_host_reach(const HostEntry& host, bool this_machine, const SshDefaults& defaults);

/// decide_host_reach with `this_machine` = is_local_host(host.name).
HostReach decide_host_reach(const HostEntry& host, const SshDefaults& defaults);

}  // namespace ferry
