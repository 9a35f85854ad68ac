#pragma once
/// \file
/// Collectives over a set of processes, possibly of several namespaces: PMIx's connect and
/// disconnect (Open MPI's `MPI_Comm_accept`/`MPI_Comm_connect`, `MPI_Comm_disconnect`) and
/// its fences over listed processes. Each host that holds some of the processes reports
/// once all of its own have entered (libpmix tracks that); the operation completes when
/// every such host has, and each of them gets the data of all, in host order. Pure: the
/// front end feeds it the hosts' reports and sends the answers.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ferry/common/result.hpp"
#include "ferry/dynproc/name_directory.hpp"

namespace ferry {

class GroupOps {
 public:
  enum class Kind : uint8_t { kFence = 0, kConnect = 1, kDisconnect = 2 };
  /// The hosts (placement indices) that hold `proc`, a wildcard rank meaning every rank of its
  /// namespace; empty when the job has no such process.
  using HostsOf = std::function<std::vector<int>(const ProcId&)>;
  /// A host's report: where the answer goes and under which of its numbers.
  struct Arrival {
    int host = 0;
    uint32_t id = 0;
    bool operator==(const Arrival&) const = default;
  };
  /// A finished operation: every host that reported, and the answer (the data of all, in
  /// host order, or nothing with an error status).
  struct Done {
    std::vector<Arrival> hosts;
    int32_t status = kPmixSuccess;
    std::string data;
  };

  explicit GroupOps(HostsOf hosts_of);

  /// Host `host` reports (its number `id`) that its processes among `procs` entered an
  /// operation of `kind`, with `data`. Returns the operation when it is complete, nullopt
  /// while hosts are missing. Reports from one host for the same processes and kind are
  /// taken in order: a second one before the first completed is the next operation. An
  /// Error (a broken ferryd) for no processes, a process the job lacks, or a host that holds
  /// none of them.
  Result<std::optional<Done>> arrive(int host, uint32_t id, Kind kind, std::vector<ProcId> procs,
                                     std::string data);

  /// Host `host` is gone: every pending operation it was part of ends, unreachable, for the
  /// hosts that had reported.
  std::vector<Done> host_lost(int host);

  /// Hosts missing from the oldest pending operation (hang diagnostics); empty when none is.
  std::vector<int> missing_hosts() const;
  std::size_t pending() const;

 private:
  struct Round {
    std::vector<int> participants;  // sorted
    std::map<int, Arrival> arrived;
    std::map<int, std::string> data;
    uint64_t order = 0;  // when it began, for missing_hosts()
  };
  using Key = std::pair<Kind, std::vector<ProcId>>;
  HostsOf hosts_of_;
  std::map<Key, std::vector<Round>> rounds_;  // per key, oldest first
  uint64_t next_order_ = 0;
};

}  // namespace ferry
