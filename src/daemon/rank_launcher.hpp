#pragma once
// Starting ferryd's ranks: each rank's environment (ferryd's own, its binding, the job's,
// its own, the job tag), its cores and devices, its pipes and rendezvous fds, and the
// spawn itself. One rank per call, so that ferryd can hear the front end between two.

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ferry/binding/host_binder.hpp"
#include "ferry/binding/plan.hpp"
#include "ferry/common/result.hpp"
#include "ferry/daemon/pmi_proxy.hpp"
#include "ferry/daemon/pmix_server.hpp"
#include "ferry/process/spawner.hpp"
#include "ferry/process/unique_fd.hpp"
#include "ferry/rendezvous/open_mpi_mca.hpp"
#include "ferry/wire/messages.hpp"

namespace ferry {

/// A rank that started: its pid, and ferryd's ends of its pipes.
struct LaunchedRank {
  pid_t pid = -1;
  UniqueFd out;  ///< read end of its stdout
  UniqueFd err;  ///< read end of its stderr
  UniqueFd in;   ///< write end of its stdin; the stdin rank only
};

class RankLauncher {
 public:
  /// `host`: this host's name, for the lines the user sees and the ranks' environment.
  /// `log`: one line for the user.
  RankLauncher(ProcessSpawner& spawner, std::string host,
               std::function<void(const std::string&)> log);
  RankLauncher(const RankLauncher&) = delete;
  RankLauncher& operator=(const RankLauncher&) = delete;

  /// Loads the host's topology and devices, devices under `root` ("/" but in tests).
  void load_devices(const std::string& root);
  /// The host's hwloc topology once loaded (null if it could not be).
  hwloc_topology_t topology() const { return binder_.topology(); }
  /// The allowed cores of each socket of this host (for Hello; empty: no topology).
  std::vector<int> socket_cores() const { return binder_.socket_cores(); }
  /// Prepares `spec`'s ranks: the working directory, every rank's binding (computed before
  /// the first fork; its lines are logged). `spec` must outlive every start(). `tag` is the
  /// value of kJobTagVar for the ranks; `pmi` (or null) hands out their PMI sockets.
  void prepare(const wire::HostSpec& spec, const std::string& tag, PmiProxy* pmi);
  /// What the prepared job needs of this host's name (Horovod's gloo binds to its address):
  /// nothing; a check whose failure is a warning (the ranks may not be Horovod's, and start
  /// meanwhile); or, for a job started as horovodrun, a check no rank starts before.
  enum class NameNeed { kNone, kWarn, kRequire };
  NameNeed name_need() const { return name_need_; }
  /// The check's result (check_own_name): for kRequire a failure is every rank's reason not
  /// to start; for kWarn it is one warning line, on the job's first attempt.
  void name_checked(const Status& st);
  /// The spec's ranks get their PMIx environment from `pmix` (null: none), after prepare().
  void use_pmix(PmixServer* pmix) { pmix_ = pmix; }
  /// Each prepared rank's CPUs in hwloc's list form ("0-3,8"), "UNBOUND" for a rank that
  /// runs unbound; local-rank order. Empty when there is no plan.
  std::vector<std::string> cpusets() const;
  /// Starts entry `local` of the spec's ranks, or says why it cannot run. Entries added to
  /// the spec after prepare() (ranks that joined the running job) start without a PMI
  /// socket (PMI's world is the spec's) and without a binding of their own; processes
  /// MPI_Comm_spawn started get the binding the plan gives their local index.
  Result<LaunchedRank> start(size_t local);
  /// What entry `local` wrote to its TORCHELASTIC_ERROR_FILE (at most wire::kErrorFileLimit
  /// bytes); "" when the spec asks for no error files or the rank wrote none.
  std::string error_file(size_t local) const;
  /// The error files' directory ("" while none was made): the guard removes it should ferryd
  /// die before its destructor runs.
  const std::string& error_dir() const { return error_dir_; }
  /// Removes the error files' directory (ferryd is done with the job).
  ~RankLauncher();

 private:
  std::vector<std::string> environment(const wire::RankLaunch& rl,
                                       const RankBinding* binding) const;
  const RankBinding* spawned_binding(size_t local);
  void add_rendezvous(SpawnRequest& req, const wire::RankLaunch& rl, size_t local);
  void add_pmi_socket(SpawnRequest& req, int id, const PmiProxy::Member& place, bool spawned);
  std::vector<std::string> open_mpi_environment(const std::vector<std::string>& env);
  std::string error_file_path(size_t local) const;

  ProcessSpawner& spawner_;
  const std::string host_;
  std::function<void(const std::string&)> log_;
  HostBinder binder_;
  const wire::HostSpec* spec_ = nullptr;
  PmiProxy* pmi_ = nullptr;
  PmixServer* pmix_ = nullptr;
  std::string device_root_ = "/";
  OpenMpiHost open_mpi_;          // read at prepare()
  bool open_mpi_logged_ = false;  // its --verbose line, once per attempt
  size_t prepared_ = 0;           // the spec's ranks at prepare(); later entries joined the job
  std::string wdir_;
  std::vector<std::string> base_env_;  // ferryd's own environment
  std::vector<std::string> tags_;      // kJobTagVar and FERRY_JOB_ID
  NameNeed name_need_ = NameNeed::kNone;
  std::string name_error_;  // why no rank may start here (a name Horovod cannot use), or ""
  std::string error_dir_;   // where the ranks' error files go; made at the first spec that asks
  Result<HostBindingPlan> bindings_ = make_error("no HostSpec yet");  // spawns point into it
  // Spawned processes' bindings (spawned_binding()), kept as long as the launcher: spawns
  // point into them too.
  std::vector<std::unique_ptr<HostBindingPlan>> spawned_plans_;
};

}  // namespace ferry
