#pragma once
/// \file
/// The hosts a job may use, in the order the user gave them, with how each is reached.

#include <string>
#include <vector>

#include "ferry/common/result.hpp"

namespace ferry {

/// One host of the job. `name` is the host string as the user wrote it (it is also what
/// Horovod's HOROVOD_HOSTNAME and the output report use).
struct HostEntry {
  std::string name;    ///< as given: alias, hostname or address (IPv6 without brackets)
  std::string user;    ///< login user; empty = ssh config / current user
  int port = 0;        ///< SSH port; 0 = ssh config / -p / 22
  int slots = 1;       ///< ranks this host may take before oversubscribing
  int max_slots = 0;   ///< hard limit even with --oversubscribe; 0 = none
  std::string ferryd;  ///< path of ferryd on that host; empty = the default
  std::string origin;  ///< where it was declared ("-H", "hosts.txt:3") for messages
};

/// Hosts in declaration order; a host named twice is merged (its slots added). A host's
/// identity is name + user + port: `10.0.0.5 port=2201` and `10.0.0.5 port=2202` (two
/// containers behind one address) are two hosts with the same `name`.
/// Names and users hold only letters, digits, '.', '-', '_' (IPv6 names also ':' and a
/// `%zone`) and never start with '-', so they are safe on an ssh command line. IPv6 names
/// are stored without brackets: add them back wherever a port follows.
using HostList = std::vector<HostEntry>;

/// Parses the host option's text (`-H`, `--host`, horovodrun's `--hosts`; wire::HostSpec is
/// something else, a host's part of a job): `host[:slots][,host[:slots]...]`; also
/// `user@host:slots`, `[v6addr]` and `[v6addr]:slots`; a bare item with two or more colons is
/// one IPv6 address with `default_slots` (`fe80::1:4` is an address, not slots). A host
/// without slots gets
/// `default_slots`. Repeated hosts add slots (Open MPI: `-H a,a,b` is a:2,b:1). Spaces around
/// items are fine; an empty item is an error. Errors name the flag and the bad token:
/// "-H: bad slot count 'x' in 'a:x' (expected a positive integer)".
Result<HostList> parse_host_option(const std::string& text, int default_slots = 1);

/// Parses hostfile text, one host per line: `[user@]host [key=value...]` (Open MPI, Horovod,
/// DeepSpeed: `slots=N`, `max_slots=M`, Open MPI's aliases count/cpu, max-slots/slots_max,
/// username), `host:N` (MPICH hydra), IPv6 as in `parse_host_option`, and ferry's `port=`,
/// `user=`, `ferryd=`. `#` starts a comment anywhere, `//` at the start of a word; blank
/// lines are skipped. Repeated lines merge as in `merge_hosts`. `origin` is "file:line" of
/// the first line naming the host. Errors are "file:line: ..." naming the bad key or value;
/// a text with no host at all is an error too. `file` is only used in messages.
Result<HostList> parse_hostfile_text(const std::string& text, const std::string& file,
                                     int default_slots = 1);

/// Reads and parses a hostfile; `path` as given names it in origins and errors
/// ("hosts.txt: cannot read: No such file or directory").
Result<HostList> read_hostfile(const std::string& path, int default_slots = 1);

/// Adds `more` to `into`, merging hosts with the same name, user and port: slots add,
/// max_slots add when both are set (otherwise the merged host has no limit), a non-empty
/// later `ferryd` wins, the first `origin` and position stay. New hosts keep their order.
void merge_hosts(HostList& into, const HostList& more);

}  // namespace ferry
