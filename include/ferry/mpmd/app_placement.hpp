#pragma once
/// \file
/// The parts of an MPMD job placed as one world: each part takes the free slots of its hosts
/// in the job's mapping order, its ranks numbered after those of the parts before it (as
/// mpirun and hydra number them), so that RANK, LOCAL_RANK, WORLD_SIZE and the binding are
/// those of the whole job while each rank knows its part (RankSlot::app).

#include <string>
#include <vector>

#include "ferry/common/result.hpp"
#include "ferry/hosts/host_list.hpp"
#include "ferry/plan/placement.hpp"

namespace ferry {

/// One part of the job, resolved: its command, environment and where it may run.
struct AppSpec {
  std::vector<std::string> command;
  int np = 0;                        ///< 0: every free slot left on its hosts
  std::vector<size_t> hosts;         ///< indices into the job's host list; empty: all of them
  int per_host = 0;                  ///< -N of this part; 0: the job's policy
  std::vector<std::string> exports;  ///< "K=V" for this part's ranks, over the job's
  std::string wdir;                  ///< "": the job's
  std::string where;                 ///< "part 2", "apps.txt:3": for messages
};

/// Places `apps` in order over `hosts`: a part's ranks go to the slots its hosts still have
/// free after the parts before it, by `policy` (its own per_host when set). A part asking for
/// more than is free fails naming the part, unless `oversubscribe`: then it is spread over
/// its hosts as place_ranks spreads a job, within max_slots. The result's app_sizes give each
/// part's size; every rank's `app` its part.
Result<Placement> place_apps(const HostList& hosts, const std::vector<AppSpec>& apps,
                             bool oversubscribe, const PlacementPolicy& policy = {});

/// The part of global rank `rank` given each part's size in order (the last part for a rank
/// past the end); 0 when `app_sizes` is empty.
int app_of_rank(const std::vector<int>& app_sizes, int rank);

}  // namespace ferry
