#pragma once
/// \file
/// The pure half of PMIx, Open MPI's runtime interface: what ferryd's PMIx server registers
/// for one attempt (`PmixNamespace`), and the front end's two services for it: the fences
/// (`PmixFences`: one message per host each way, whatever the rank count, as the PMI-1
/// barrier) and direct-modex routing (`PmixModexRouter`: a rank's data asked for by another
/// host). The libpmix side lives in ferryd (daemon/pmix_server).

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ferry/common/result.hpp"

namespace ferry {

/// One rank as every PMIx client of the job sees it.
struct PmixProc {
  int rank = 0;
  uint32_t node = 0;        ///< index into PmixNamespace::nodes
  uint16_t local_rank = 0;  ///< among the ranks of its node, in rank order
  uint32_t app = 0;         ///< its part of an MPMD job (PMIX_APPNUM)
  bool operator==(const PmixProc&) const = default;
};

/// What one host's PMIx server registers for an attempt: the job, node and process facts
/// Open MPI 4.1 reads in MPI_Init (job and universe size, local peers, local and node
/// ranks, the node and process maps).
struct PmixNamespace {
  std::string nspace;  ///< the attempt's namespace: "ferry.<job id>.<attempt>"
  uint32_t job_size = 0;
  uint32_t universe_size = 0;      ///< PMIX_UNIV_SIZE (MPI_UNIVERSE_SIZE); 0: job_size
  std::vector<std::string> nodes;  ///< node names, node index order
  uint32_t node = 0;               ///< this host's index
  std::vector<PmixProc> procs;     ///< every rank, rank order
  std::vector<int> local_ranks;    ///< this host's ranks, in rank order
  std::string local_peers;         ///< "4,5,6,7"
  std::string node_map;            ///< the nodes as PMIx reads them: "a,b,c"
  std::string proc_map;            ///< ranks per node as PMIx reads them: "0,1;2,3;4"
  /// The local ranks' CPUs, local-rank order, colon-separated ("0-1:2-3", "UNBOUND" for an
  /// unbound rank); "" unknown. Open MPI derives how close two local ranks are from it.
  std::string local_cpusets;
  /// The ranks of each part (app) of an MPMD job, in order; empty: one app of every rank.
  std::vector<uint32_t> app_sizes;
};

/// Gives `ns` an MPMD job's parts: `app_sizes` (each part's ranks, in rank order) must add up
/// to the job's size; each proc gets its part. Empty sizes: one app. An Error otherwise.
Status set_pmix_apps(PmixNamespace& ns, const std::vector<uint32_t>& app_sizes);

/// Builds host `node`'s namespace. `node_of_rank[r]` is rank r's node index, `nodes` the
/// node names (duplicates get "#k" suffixes, so that PMIx tells them apart). An Error when
/// the inputs disagree (a rank on a node that does not exist, no rank on `node` unless
/// `may_have_none`: a spawned namespace, which every host registers).
Result<PmixNamespace> make_pmix_namespace(const std::string& nspace,
                                          const std::vector<uint32_t>& node_of_rank,
                                          std::vector<std::string> nodes, uint32_t node,
                                          bool may_have_none = false);

/// The namespace of processes MPI_Comm_spawn started, as host `node` registers it: its rank r
/// on host index node_of_rank[r] of `nodes` (the attempt's). As PRRTE registers a job, its
/// node list holds only the hosts that run some of them; a host that runs none registers it
/// too, with no local process (its ranks may connect to them).
Result<PmixNamespace> make_spawned_namespace(const std::string& nspace,
                                             const std::vector<uint32_t>& node_of_rank,
                                             const std::vector<std::string>& nodes, uint32_t node);

/// The namespace name of `job_id`'s attempt `attempt` (at most 255 characters, as PMIx allows).
std::string pmix_nspace_name(const std::string& job_id, uint32_t attempt);

/// The hosts' PMIx names from their hostnames in host order: PMIx tells nodes apart by name,
/// so a name seen before gets "#2", "#3", ... A host's name depends only on the hosts before it.
std::vector<std::string> pmix_node_names(std::vector<std::string> hostnames);

/// Fence aggregator over `hosts` hosts (indices 0..hosts-1), for one attempt: every host's
/// n-th fence is the same fence.
class PmixFences {
 public:
  /// `complete(seq, data)`: every host's data for fence `seq`, concatenated in host order
  /// (each PMIx server unpacks the blobs of all hosts): send it to every host.
  using Complete = std::function<void(uint32_t seq, const std::string& data)>;
  PmixFences(int hosts, Complete complete);

  /// Host `host` reports that its ranks entered fence `seq` with `data`. An Error (a broken
  /// or foreign ferryd) for an unknown host, a repeated report, or a fence out of order.
  Status host_fence(int host, uint32_t seq, std::string data);
  /// Hosts whose report for the fence being gathered is still missing (hang diagnostics).
  std::vector<int> missing_hosts() const;

 private:
  Complete complete_;
  uint32_t seq_ = 1;
  std::vector<bool> arrived_;
  std::vector<std::string> data_;
  int count_ = 0;
};

/// Routes direct-modex requests between hosts: a request from host `from` for rank `r`
/// goes to r's host under a number of the router's own; the reply goes back to `from`
/// under the asker's number.
class PmixModexRouter {
 public:
  /// `host_of_rank[r]`: the host (attempt index) of rank r.
  explicit PmixModexRouter(std::vector<uint32_t> host_of_rank);

  struct Hop {
    int host = 0;     ///< where the message goes
    uint32_t id = 0;  ///< the number it carries there
  };
  /// Host `from` asks (its number `id`) for rank `rank`'s data. An Error for a rank not in
  /// the job.
  Result<Hop> request(int from, uint32_t id, int rank);
  /// The same for a process the caller knows to be on host `to` (a spawned namespace's).
  Hop request_to(int from, uint32_t id, int to);
  /// Host `from` answers request `id` (the router's number). An Error for an unknown number
  /// or an answer from another host than the one asked.
  Result<Hop> reply(int from, uint32_t id);
  /// Host `host` is gone: the requests waiting on it, to be answered with an error.
  std::vector<Hop> host_lost(int host);

 private:
  struct Pending {
    int from = 0;
    uint32_t from_id = 0;
    int to = 0;
  };
  std::vector<uint32_t> host_of_rank_;
  std::map<uint32_t, Pending> pending_;
  uint32_t next_ = 1;
};

}  // namespace ferry
