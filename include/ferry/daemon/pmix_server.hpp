#pragma once
/// \file
/// ferryd's PMIx server, for Open MPI programs (and mpi4py on them): libpmix's server (loaded
/// at run time, see src/daemon/pmix_library.hpp) with ferry's answers to its upcalls. It
/// registers each attempt's namespace (job, node and process facts, from a PmixNamespace),
/// gives every rank its PMIx environment, and serves:
///  - fences: once every local rank entered one, a PmixFence frame with their data goes to
///    the front end; its PmixFenceDone (every host's data) releases them;
///  - direct modex: a local rank wants a remote rank's data: a PmixModexRequest goes out,
///    its PmixModexReply answers; and the front end may ask for a local rank's data;
///  - abort: a PmiAbort frame (the job ends with the rank's status);
///  - finalize tracking: which ranks called PMIx_Init and not yet PMIx_Finalize.
///  - MPI's dynamic processes (publish, lookup, unpublish in the job's name service; connect,
///    disconnect and fences over listed processes): PmixPublish, PmixLookup, PmixUnpublish and
///    PmixGroupOp frames go out; PmixNames and PmixGroupDone answer them.
///  - MPI_Comm_spawn: a PmixSpawn frame goes out; the front end places the children and sends
///    every host a PmixSpawnJob (add_namespace(), then the local children start with
///    child_environment()); its PmixSpawnDone answers the parent.
///
/// The ranks are given ferryd's own loopback listener as the server's address; libpmix
/// starts when the first of them connects, and every connection is relayed to it. A job whose
/// ranks never call PMIx_Init (PyTorch, Horovod, MPICH) never loads libpmix.
///
/// libpmix runs its own progress thread; every upcall is handed to the io_context's thread,
/// where all of this class's state lives. The server's files (its rendezvous files and the
/// ranks' session directories) live in a private directory (0700) that the destructor
/// removes. There is one PMIx server per process: create at most one PmixServer at a time.

#include <asio.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ferry/common/result.hpp"
#include "ferry/rendezvous/pmix_job.hpp"
#include "ferry/wire/messages.hpp"

namespace ferry {

class PmixServer {
 public:
  struct Events {
    /// A frame for the front end (kPmixFence, kPmixModexRequest, kPmixModexReply, kPmiAbort,
    /// and those of dynamic processes).
    std::function<void(std::string frame)> send;
    /// libpmix started (its version line) when a rank first connected; or it could not
    /// (why: that rank's MPI_Init fails). Either may be empty.
    std::function<void(const std::string& version)> started;
    std::function<void(const std::string& why)> failed;
  };

  /// Prepares the server as node `node_name`: its files in a new private directory under
  /// `tmp_root`, and the loopback address its ranks are given. libpmix itself is loaded and
  /// started only when a rank connects (Open MPI's MPI_Init) or another host asks for a local
  /// rank's data, so a job that runs no Open MPI program never loads it; the connection is
  /// then relayed to libpmix's own listener. `hwloc_topology` (an hwloc_topology_t, or null)
  /// is this host's, already loaded: libpmix then does not discover it again (tens of
  /// milliseconds); it must outlive the server. An Error when the directory or the listener
  /// cannot be made.
  static Result<std::unique_ptr<PmixServer>> start(asio::io_context& io,
                                                   const std::string& node_name,
                                                   const std::string& tmp_root,
                                                   void* hwloc_topology, Events events);
  ~PmixServer();
  PmixServer(const PmixServer&) = delete;
  PmixServer& operator=(const PmixServer&) = delete;

  /// Whether libpmix's hwloc can read `hwloc_topology`, made by ferryd's hwloc (in the
  /// shipped ferryd another copy of the library, maybe of another version): start() hands it
  /// over only then. False where the host has no libpmix.
  static bool shares_topology(void* hwloc_topology);

  /// The server's private directory (removed by the destructor).
  const std::string& directory() const;

  /// The start of this process's server directory names under a tmp root:
  /// "ferry-pmix-<pid namespace>-<pid>-" (a random suffix follows).
  static std::string directory_prefix();
  /// Removes the server directories under `tmp_root` that this user's ferryds left when they
  /// died with their guard (SIGKILL of the whole step, the OOM killer): those named for a pid
  /// of this pid namespace that no longer runs, owned by this user. Returns how many.
  static int remove_stale_directories(const std::string& tmp_root);
  /// Whether libpmix's finalize, called by a server's destructor, did not return within
  /// its limit: its threads still run, and the process must end with _exit.
  static bool finalize_left_running();
  /// Whether a server ran in this process and was finalized: libpmix cannot start another
  /// (ferryd runs one for its whole life; a test program that runs several must run each
  /// test in a process of its own, as CTest does).
  static bool finalized_before();

  /// libpmix's version line, for --verbose ("" before libpmix started).
  std::string version() const;
  /// Whether libpmix's server runs (a rank connected, or a local rank's data was asked for).
  bool library_started() const;

  /// Registers the attempt's namespace (at once, or when libpmix starts); the previous
  /// attempt's is deregistered first (what it still waited for is answered with an error).
  Status begin(const PmixNamespace& ns);
  /// The PMIx variables of local rank `rank` of the current namespace ("K=V"), those
  /// PMIx_server_setup_fork would give; registers it as a client of this server (at once, or
  /// when libpmix starts).
  Result<std::vector<std::string>> rank_environment(int rank);

  /// The front end's answer to this host's fence `seq`: release the local ranks. An Error
  /// when no such fence waits.
  Status fence_done(const wire::PmixFenceDone& m);
  /// The front end asks for local rank `m.rank`'s data (for another host's rank).
  void modex_request(const wire::PmixModexRequest& m);
  /// The answer to a request this server sent. An Error for an unknown id.
  Status modex_reply(const wire::PmixModexReply& m);

  /// The front end's answer to a name request, or to a collective over some processes. An
  /// answer for a request no longer waiting (timed out here, an earlier attempt's) is dropped.
  void names_answer(const wire::PmixNames& m);
  void group_done(const wire::PmixGroupDone& m);
  /// The front end's answer to a spawn this server asked for (dropped when none waits).
  void spawn_done(const wire::PmixSpawnDone& m);
  /// Registers `ns`, the namespace of processes MPI_Comm_spawn started, beside the attempt's
  /// (starting libpmix if it has not). Every host registers it, with no local process or some.
  Status add_namespace(const PmixNamespace& ns);
  /// The PMIx variables of rank `rank` of spawned namespace `nspace`; registers it as a client.
  Result<std::vector<std::string>> child_environment(const std::string& nspace, int rank);

  /// Whether `rank` called PMIx_Init (MPI_Init) in this attempt and not yet PMIx_Finalize.
  bool unfinalized(int rank) const;

  struct State;  // shared with libpmix's upcalls

 private:
  explicit PmixServer(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

}  // namespace ferry
