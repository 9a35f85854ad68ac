#pragma once
/// \file
/// The front end's rendezvous services for one job: the Horovod KV store (served to every
/// host's ferryd over its link), the PMI-1 barrier aggregator, the job secret and the
/// network interface choice with the environment each host's ranks get from them.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ferry/common/result.hpp"
#include "ferry/dynproc/group_ops.hpp"
#include "ferry/dynproc/name_directory.hpp"
#include "ferry/plan/placement.hpp"
#include "ferry/rendezvous/elastic_rounds.hpp"
#include "ferry/rendezvous/kv_store.hpp"
#include "ferry/rendezvous/nic_choice.hpp"
#include "ferry/rendezvous/pmi_job.hpp"
#include "ferry/rendezvous/pmix_job.hpp"
#include "ferry/wire/messages.hpp"

namespace ferry {

class RendezvousService {
 public:
  /// `broadcast(frame)` sends a frame to every host still connected (PMI barrier and PMIx
  /// fence answers); `send_to(host, frame)` to one host (placement index) if still connected.
  /// `nspace` is the attempt's PMIx namespace (pmix_nspace_name).
  RendezvousService(const Placement& placement, std::string nspace,
                    std::function<void(const std::string&)> broadcast,
                    std::function<void(int host, const std::string&)> send_to);

  /// Makes the job secret; an Error if the system has no randomness.
  Status init();
  const std::string& secret() const { return secret_; }

  /// Chooses the interface per host (`hosts` in placement order); `requested` is
  /// --network-interface (names; each host takes the first it has).
  const NicChoice& choose(const std::vector<HostNetwork>& hosts,
                          const std::vector<std::string>& requested,
                          const std::vector<std::string>& excluded = {});
  const NicChoice& choice() const { return choice_; }

  /// Variables for every rank of host `host` (job-wide ones are elsewhere): NIC variables
  /// and Horovod's gloo rendezvous through that host's ferryd at `kv_port` (none if 0).
  /// Variables `exports` sets are left to the user.
  std::vector<std::string> host_environment(std::size_t host, uint16_t kv_port,
                                            const std::vector<std::string>& exports) const;

  /// Elastic Horovod: a new round's world. The store is emptied and its scopes are sized for
  /// `world`, as horovod's RendezvousServer.init does before the workers rendezvous again.
  void reset_store(const std::vector<ElasticAssignment>& world);

  /// Serves one KV request from a ferryd.
  wire::KvReply serve(const wire::KvRequest& req);
  /// Host `host`'s ferryd reports a PMI barrier; answers every host once all arrived. An
  /// Error means that ferryd is broken.
  Status pmi_barrier(int host, const wire::PmiBarrier& b);
  /// Hosts whose PMI barrier report is missing (for diagnostics).
  std::vector<int> pmi_missing() const { return pmi_.missing_hosts(); }
  /// A PMI spawn made process group `kvsname`, run by `hosts`: its barriers gather from
  /// those hosts alone and are answered to them. An Error for a name already in use.
  Status add_pmi_group(const std::string& kvsname, const std::vector<int>& hosts);

  /// Host `host`'s ferryd reports a PMIx fence; answers every host once all arrived. An Error
  /// means that ferryd is broken.
  Status pmix_fence(int host, const wire::PmixFence& f);
  /// Hosts whose PMIx fence report is missing, or else those missing from the oldest
  /// collective over some processes (for diagnostics).
  std::vector<int> pmix_missing() const;
  /// Host `host` asks for a rank's PMIx data: forwarded to that rank's host, or answered with
  /// an error at once for a rank not in the job.
  void pmix_modex_request(int host, const wire::PmixModexRequest& r);
  /// Host `host` answers a forwarded request: sent back to the asker. An Error for an answer
  /// nobody asked for (that ferryd is broken).
  Status pmix_modex_reply(int host, const wire::PmixModexReply& r);
  /// Host `host` asks for what MPI's dynamic processes need (rendezvous_dynamic.cpp): the
  /// job's name service (publish, lookup, unpublish) and collectives over some processes.
  /// Answered at once, or when the names are published or every host of the collective
  /// reported. An Error means that ferryd is broken.
  Status pmix_dynamic(int host, const wire::PmixDynamic& m);
  /// The attempt's PMIx namespace.
  const std::string& nspace() const { return nspace_; }
  /// MPI_Comm_spawn made namespace `nspace`, its rank r on host `host_of_rank[r]`: its
  /// processes take part in collectives and are asked for their data like the job's ranks.
  void add_namespace(const std::string& nspace, std::vector<uint32_t> host_of_rank);
  /// Host `host` is gone: the requests it was asked are answered with an error, its waiting
  /// lookups are forgotten, and the collectives it was part of fail for the other hosts.
  void host_lost(int host);

  /// PMIx fences completed and direct-modex requests forwarded so far (for --verbose).
  uint64_t pmix_fences() const { return pmix_fences_done_; }
  uint64_t pmix_requests() const { return pmix_requests_; }
  /// Collectives over some processes completed (connect, disconnect, listed fences).
  uint64_t pmix_groups() const { return pmix_groups_done_; }

 private:
  std::function<void(const std::string&)> broadcast_;
  std::function<void(int, const std::string&)> send_to_;
  KvStore kv_;
  PmiJob pmi_;
  std::map<std::string, PmiJob, std::less<>> pmi_groups_;  // PMI spawns', by KVS name
  PmixFences pmix_fences_;
  PmixModexRouter pmix_modex_;
  // MPI's dynamic processes: the job's names, its lookups waiting (by ticket: the asking host
  // and its number), collectives over some processes.
  std::string nspace_;
  std::vector<uint32_t> host_of_rank_;
  std::map<std::string, std::vector<uint32_t>> spawned_;  // by namespace: each rank's host
  NameDirectory names_;
  struct Asker {
    int host = 0;
    uint32_t id = 0;
  };
  std::map<uint64_t, Asker> lookups_;
  uint64_t next_ticket_ = 1;
  GroupOps groups_;
  Status publish(int host, const wire::PmixPublish& m);
  Status lookup(int host, const wire::PmixLookup& m);
  Status unpublish(int host, const wire::PmixUnpublish& m);
  Status group_op(int host, const wire::PmixGroupOp& m);
  void answer_lookup(const NameDirectory::Answer& a);
  std::vector<int> hosts_of(const ProcId& p) const;
  void dynamic_host_lost(int host);
  NicChoice choice_;
  std::string secret_;
  uint64_t pmix_fences_done_ = 0;
  uint64_t pmix_requests_ = 0;
  uint64_t pmix_groups_done_ = 0;
};

}  // namespace ferry
