#pragma once
/// \file
/// Placement: which rank runs on which host, and its local/cross coordinates
/// (horovodrun `get_host_assignments`, REFERENCE.md §1).

#include <vector>

#include "ferry/common/result.hpp"
#include "ferry/hosts/host_list.hpp"

namespace ferry {

/// Coordinates of one rank.
struct RankSlot {
  int rank = 0;        ///< global rank
  int local_rank = 0;  ///< index on its host
  int local_size = 0;  ///< ranks on its host
  int cross_rank = 0;  ///< index of its host among hosts having this local_rank
  int cross_size = 0;  ///< how many hosts have this local_rank
  int node_rank = 0;   ///< index of its host among hosts with ranks
};

/// The ranks of one host, in rank order.
struct HostPlan {
  HostEntry host;
  /// The host's name for frameworks (HOROVOD_HOSTNAME, reports): the name as given, or
  /// "name:port" when several entries share a name (containers behind one address).
  std::string label;
  int node_rank = 0;
  std::vector<RankSlot> ranks;
};

/// Every host that received at least one rank, in the user's order.
struct Placement {
  int world_size = 0;
  std::vector<HostPlan> hosts;
  bool oversubscribed = false;  ///< some host got more ranks than its slots
};

/// Places `np` ranks (np <= 0: one per slot) filling each host's slots in order. More ranks
/// than slots is an error unless `oversubscribe`; then the extra ranks are spread evenly
/// (never past a host's max_slots) and ranks stay contiguous per host.
Result<Placement> place_ranks(const HostList& hosts, int np, bool oversubscribe);

}  // namespace ferry
