#pragma once
// Private to src/daemon/: PMIx on ferryd's side of the session, attempt by attempt. The
// server is prepared (its directory, its address) with the first attempt whose spec asks for
// PMIx, libpmix started when a rank connects, and serves every later one,
// each under a namespace of its own; a host without libpmix runs its jobs without it
// (--verbose says why), since ranks that are not Open MPI's never miss it.

#include <asio.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ferry/common/result.hpp"
#include "ferry/daemon/pmix_server.hpp"
#include "ferry/daemon/sweeper.hpp"
#include "ferry/wire/messages.hpp"

namespace ferry {

class PmixService {
 public:
  /// `send`: a frame for the front end; `log`: a line for the user. `guard` removes the
  /// server's directory if ferryd dies without doing so.
  /// `topology`: this host's hwloc topology for the server (see PmixServer::start).
  PmixService(asio::io_context& io, Guard& guard, std::function<void(const std::string&)> send,
              std::function<void(const std::string&)> log, std::function<void*()> topology);

  /// Prepares the server before the first HostSpec (PmixStart), as host `node` of the job, so
  /// that this overlaps the other hosts' connecting. What went wrong is said at the first
  /// spec that asks for PMIx, under --verbose, as if the server had started there.
  void start_early(const std::string& node);

  /// Sets PMIx up for `spec`'s attempt: the server that gives its ranks their environment,
  /// or null when this attempt's ranks get none. `cpusets`: each local rank's CPUs
  /// (RankLauncher::cpusets()), from which Open MPI tells how close two ranks are.
  PmixServer* begin(const wire::HostSpec& spec, const std::vector<std::string>& cpusets);

  Status fence_done(const wire::PmixFenceDone& m);
  void modex_request(const wire::PmixModexRequest& m);
  Status modex_reply(const wire::PmixModexReply& m);
  /// Answers to dynamic processes' requests (dropped while PMIx is off).
  void names_answer(const wire::PmixNames& m);
  void group_done(const wire::PmixGroupDone& m);
  void spawn_done(const wire::PmixSpawnDone& m);
  /// Registers the namespace of processes MPI_Comm_spawn started (every host does, before its
  /// own children start). An Error (for the user) when PMIx is off or libpmix refuses it.
  Status spawn_job(const wire::PmixSpawnJob& m);

  /// Why rank `rank`, which ended as `e` says, failed in PMIx's eyes ("" when it did not):
  /// it called MPI_Init (PMIx_Init) and exited without MPI_Finalize, whatever its status.
  std::string exit_failure(int rank, const wire::Exited& e) const;

 private:
  asio::io_context& io_;
  Guard& guard_;
  std::function<void(const std::string&)> send_, log_;
  std::function<void*()> topology_;
  // The server, started once (libpmix cannot start a second in one process).
  void start_server(const std::string& node);

  std::unique_ptr<PmixServer> server_;
  bool tried_ = false;
  std::string node_;                     // the name the server started with
  std::string start_why_;                // why it did not start
  bool said_ = false;                    // that it did not start was told (--verbose)
  bool verbose_ = false;                 // the current attempt's spec asks for --verbose lines
  bool on_ = false;                      // the current attempt's ranks have PMIx
  std::vector<std::string> node_names_;  // the current attempt's hosts, for spawned namespaces
  uint32_t node_index_ = 0;
  uint32_t universe_size_ = 0;  // the attempt's MPI_UNIVERSE_SIZE
};

}  // namespace ferry
