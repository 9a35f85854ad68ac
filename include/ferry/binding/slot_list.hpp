#pragma once
/// \file
/// Open MPI's rank-file slot lists (`rank 3=node2 slot=1:0-2`): which cores one rank is bound
/// to, as logical indices. "1-2" names the host's cores 1 and 2 (counted over all its allowed
/// cores in topology order); "1:0-2" names cores 0 to 2 of socket 1 (sockets counted over the
/// packages that hold allowed cores, cores within the socket); "1:*" the whole socket. Items
/// are separated by ';' or ',' ("0:0,1" is cores 0 and 1 of socket 0; "0:0-1,1:0-1" two
/// cores of each socket). The front end checks a list against each host's socket sizes
/// (from its ferryd's Hello) and ferryd binds by it: both through resolve_slot_list().

#include <string>
#include <vector>

#include "ferry/common/result.hpp"

namespace ferry {

class Topology;

/// One item of a slot list: cores [first, last] of socket `socket` (-1: of the whole host);
/// `all`: every core of the socket.
struct SlotItem {
  int socket = -1;
  int first = 0;
  int last = 0;
  bool all = false;
};

/// Parses a slot list. Error, one line quoting it: "bad slot list '1:x'" (an empty item, a
/// number that is not decimal, a range running backwards, a socket without cores, '*' for the
/// whole host).
Result<std::vector<SlotItem>> parse_slot_list(const std::string& text);

/// The host-wide logical core indices (into Topology::cores()) that `items` name, ascending,
/// on a host whose sockets have `socket_cores[s]` allowed cores each. Error: "socket 2 does
/// not exist (the host has 2: 0-1)", "core 7 of socket 1 does not exist (it has 4: 0-3)",
/// "core 9 does not exist (the host has 8: 0-7)".
Result<std::vector<int>> resolve_slot_list(const std::vector<SlotItem>& items,
                                           const std::vector<int>& socket_cores);

/// parse_slot_list(`text`), then resolve_slot_list() on `socket_cores`.
Result<std::vector<int>> slot_list_cores(const std::string& text,
                                         const std::vector<int>& socket_cores);

/// The allowed cores of each socket of `topology`, sockets in topology order.
std::vector<int> socket_core_counts(const Topology& topology);

}  // namespace ferry
