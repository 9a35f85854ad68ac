#pragma once
/// \file
/// Placement: which rank runs on which host, and its local/cross coordinates
/// (horovodrun `get_host_assignments`).

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
  int app = 0;         ///< its part of an MPMD job (mpmd/app_placement.hpp); 0 otherwise
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
  /// The ranks of each part of an MPMD job, in part order (a part's ranks are numbered after
  /// those of the parts before it); empty: one program on every rank.
  std::vector<int> app_sizes;
};

/// How many ranks each host gets (mpirun `--map-by`).
enum class HostMapping {
  kBySlot,  ///< fill each host's slots before the next (`--map-by slot`, horovodrun)
  kByNode,  ///< one rank per host in turn, skipping full hosts (`--map-by node`)
};

/// How ranks are numbered once each host's count is known (mpirun `--rank-by`).
enum class RankOrder {
  kFollowMapping,  ///< kByNode for HostMapping::kByNode, else kBySlot (as Open MPI)
  kBySlot,         ///< a host's ranks are contiguous, hosts in order
  kByNode,         ///< round-robin over hosts: local rank 0 of every host first, then 1, ...
};

/// The placement policy; the default is horovodrun's fill-by-slot.
struct PlacementPolicy {
  HostMapping mapping = HostMapping::kBySlot;
  /// > 0: exactly this many ranks on each host in order (mpirun `-N n`, `ppr:n:node`); the
  /// last hosts get fewer (or none) when np is smaller. Overrides `mapping`'s counts.
  int per_host = 0;
  RankOrder order = RankOrder::kFollowMapping;
};

/// Places `np` ranks (np <= 0: one per slot, or per_host on every host) on `hosts` as
/// `policy` says (default: fill each host's slots in order). More ranks than slots on a host
/// is an error unless `oversubscribe`; then the extra ranks are spread evenly, never past a
/// host's max_slots. Errors name the flag to change ("... pass --oversubscribe").
Result<Placement> place_ranks(const HostList& hosts, int np, bool oversubscribe,
                              const PlacementPolicy& policy = {});

/// Completes `p` once every host's ranks (rank, local_rank, node_rank) are in: each rank's
/// local size and cross coordinates, and the hosts' labels ("name:port" where names repeat).
void finish_placement(Placement& p);

/// MPI_UNIVERSE_SIZE: the slots of the hosts that run ranks (where MPI_Comm_spawn's processes
/// may go; mpi4py.futures sizes its pool by it), never less than the world's size.
int universe_size(const Placement& p);

}  // namespace ferry
