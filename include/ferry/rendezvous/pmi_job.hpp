#pragma once
/// \file
/// The front end's side of PMI-1: gathers each host's barrier message (that host's new
/// puts) and, once every host's arrived, hands the merged pairs back to every host. Also
/// computes what each host's PmiHost needs from the placement.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ferry/common/result.hpp"
#include "ferry/plan/placement.hpp"
#include "ferry/rendezvous/pmi_host.hpp"

namespace ferry {

/// Barrier aggregator over `hosts` hosts (indices 0..hosts-1).
class PmiJob {
 public:
  /// `complete(epoch, kvs)` is called once per barrier, when the last host's message for it
  /// arrived: send `kvs` (every host's puts of that barrier, host order, last value per
  /// key) to every host as the answer to barrier `epoch`.
  using Complete = std::function<void(uint32_t epoch, const std::vector<PmiKv>& kvs)>;
  PmiJob(int hosts, Complete complete);
  /// Over the hosts `hosts` only (a spawned process group's: the hosts that run some of it);
  /// host_barrier() and missing_hosts() speak of them by the same numbers.
  PmiJob(std::vector<int> hosts, Complete complete);

  /// Host `host` reports that all its ranks entered barrier `epoch` with these puts. An
  /// Error (a broken or foreign ferryd: fail that host) for an unknown host, a repeated
  /// report, or an epoch other than the current one.
  Status host_barrier(int host, uint32_t epoch, std::vector<PmiKv> puts);

  /// The barrier being gathered (1 before the first completes).
  uint32_t epoch() const { return epoch_; }
  /// Hosts whose report for the current barrier is still missing (for hang diagnostics).
  std::vector<int> missing_hosts() const;
  /// The hosts it gathers from.
  const std::vector<int>& hosts() const { return hosts_; }

 private:
  Complete complete_;
  std::vector<int> hosts_;
  uint32_t epoch_ = 1;
  std::vector<bool> arrived_;
  std::vector<std::vector<PmiKv>> puts_;
  int count_ = 0;
};

/// MPICH's `PMI_process_mapping` value for ranks placed on nodes: `node_of_rank[r]` is the
/// node index of rank r. Runs of consecutive ranks on one node, and runs of consecutive nodes
/// with equal runs, become `(vector,(start_node,node_count,ranks_per_node),...)`;
/// e.g. {0,0,1,1} → "(vector,(0,2,2))", {0,1,1} → "(vector,(0,1,1),(1,1,2))".
std::string pmi_process_mapping(const std::vector<int>& node_of_rank);

/// PmiHostConfig for host `host_index` of `placement` (kvsname: the job id).
PmiHostConfig pmi_host_config(const Placement& placement, std::size_t host_index,
                              const std::string& kvsname);

}  // namespace ferry
