#pragma once
/// \file
/// What one job is, once the command line, hostfiles and job file are read.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ferry/binding/options.hpp"
#include "ferry/frontend/restart_policy.hpp"
#include "ferry/hosts/host_list.hpp"
#include "ferry/mpmd/app_placement.hpp"
#include "ferry/mpmd/rank_file.hpp"
#include "ferry/plan/placement.hpp"
#include "ferry/sync/tree.hpp"
#include "ferry/sync/tree_reader.hpp"

namespace ferry {

class ViewBoard;

/// Devices named for one host in a job file (`[[hosts]] devices = [0, 1]`). The host is the
/// HostList entry with the same name, user and port.
struct HostDevices {
  std::string name;
  std::string user;
  int port = 0;
  std::vector<int> devices;  ///< device indices on that host, in the order given
};

/// horovodrun's elastic mode (--host-discovery-script, or --min-np with fixed -H/--hostfile
/// hosts): Horovod's driver, in ferry.
struct ElasticOptions {
  std::string discovery_script;  ///< run every second; "" = no script
  bool fixed_hosts = false;      ///< elastic over the job's fixed hosts (horovod's FixedHosts)
  int slots_per_host = 1;        ///< --slots-per-host: slots of a line without ":N"
  int min_np = 1;                ///< --min-np (else -np): fewest workers to go on with
  int max_np = 0;                ///< --max-np: most workers; 0 = no cap
  int reset_limit = -1;          ///< --reset-limit; -1 = none
  int timeout_s = 600;           ///< --elastic-timeout: waiting for enough slots
  int cooldown_low_s = 0;        ///< --blacklist-cooldown-range LOW HIGH; 0 0 = for good
  int cooldown_high_s = 0;
  bool on() const { return fixed_hosts || !discovery_script.empty(); }
};

/// Everything a job needs once the command line is parsed.
struct JobOptions {
  HostList hosts;
  int np = 0;  ///< 0: one rank per slot
  bool oversubscribe = false;
  /// --no-pmi: no MPI rendezvous for the ranks (neither MPICH's PMI-1 nor Open MPI's PMIx:
  /// none of their variables, no PMIx listener).
  bool no_pmi = false;
  std::vector<std::string> command;
  /// An MPMD job's parts (`A : B`, --app, -configfile, a job file's [[apps]]): two or more,
  /// the first one's command is `command`. Empty: `command` on every rank.
  std::vector<AppSpec> apps;
  /// --rankfile: each rank's host and cores as the file gives them (instead of the
  /// placement policy and the binding policy's cores).
  std::optional<RankFile> rank_file;
  /// --sync: the tree every host gets before its ranks start, which they start in (relative
  /// working directories are taken inside it), read already; null: none, or `sync_request`.
  std::shared_ptr<const SyncTree> sync;
  /// --sync's trees as the command line asks for them (checked where no walk is needed): the
  /// job reads them on a thread of its own while its hosts are reached (TreeReader), and
  /// sends nothing of them before the reading ends. Null: none, or `sync`.
  std::shared_ptr<const SyncRequest> sync_request;
  std::string wdir;                  ///< where ranks start
  bool wdir_explicit = false;        ///< --wdir given: missing on a host is an error
  std::vector<std::string> exports;  ///< resolved "K=V"
  /// "NAME=DIR": DIR first on each rank's NAME, over the host's own value (mpirun --prefix).
  std::vector<std::string> path_prepends;
  int start_timeout_s = 30;
  /// --timeout: the whole job's limit in seconds (0 = none). At expiry the state report is
  /// printed, the job aborted, and ferryrun exits with kTimeoutExitStatus.
  int timeout_s = 0;
  /// --stall-timeout: print the state report when no rank printed for this long, and again
  /// after each further period (0 = off); --stall-abort: then abort as --timeout does.
  int stall_timeout_s = 0;
  bool stall_abort = false;
  /// The job's view: --report FILE (one HTML page after the job), --trace FILE (the same
  /// timeline as a Chrome trace), --stragglers S (name in the console each rank that lags its
  /// peers for S seconds; 0 off) and --straggler-fraction F (lagging: below F of the median
  /// rank). Any of the first three makes every ferryd sample its ranks every sample_ms.
  std::string report_file;
  std::string trace_file;
  int stragglers_s = 0;
  double straggler_fraction = 0.25;
  int sample_ms = 1000;
  /// --top: a live table of the ranks on this terminal once they start (frontend/job_top.hpp);
  /// `hold_console(true)` keeps the console's lines while it is up, `hold_console(false)`
  /// prints them (set by the app around its console).
  bool top = false;
  std::function<void(bool hold)> hold_console;
  /// A detached (or --nohup) job's view for `ferry top ID`: published once a second while a
  /// viewer asks (monitor/view_board.hpp); null: none.
  std::shared_ptr<ViewBoard> board;
  bool watching() const {
    return top || board || !report_file.empty() || !trace_file.empty() || stragglers_s > 0;
  }
  /// Before the first attempt's ranks start, test that every host reaches rank 0's host at
  /// MASTER_ADDR:MASTER_PORT (--no-preflight turns it off).
  bool preflight = true;
  /// --check: reach every host, choose the network, run the preflight, print one table of the
  /// hosts (ferryd, cores, accelerators, interface, software versions); start no rank.
  bool check = false;
  double kill_grace_s = 5.0;
  bool verbose = false;
  std::string ferryd_path;    ///< for hosts whose entry names none
  int stdin_rank = 0;         ///< -1: ranks get /dev/null
  int stdin_fd = 0;           ///< where ferryrun reads the stdin it forwards (tests: a pipe)
  BindingOptions binding;     ///< --bind-to, --map-by, devices: for the binding part
  PlacementPolicy placement;  ///< --map-by node, --rank-by, -N: for place_ranks
  std::vector<std::string> network_interfaces;  ///< --network-interface(s): NIC for the
                                                ///< frameworks (each host takes the first it has)
  std::vector<std::string> network_exclude;     ///< interfaces never chosen (mpirun's if_exclude)
  bool torch_local_rank_arg = false;            ///< --torch-local-rank-arg: append --local-rank=N
  bool torch_local_rank_underscore = false;     ///< ... spelt --local_rank=N (older scripts)
  /// --expand-args: {rank}, {local_rank}, {node_rank}, {world_size}, {master_addr} and
  /// {master_port} in the command's arguments are replaced per rank ({{ and }}: braces).
  bool expand_args = false;
  /// --summary: a table after the job, per host or per rank; after a failure always.
  enum class Summary { kOnFailure, kHosts, kRanks } summary = Summary::kOnFailure;
  std::vector<HostDevices> host_devices;  ///< per-host devices from the job file
  std::string remote_via = "SSH";         ///< how remote hosts are reached, for --verbose
  int ssh_port = 0;                       ///< -p, for --verbose only: neither it nor -l
  std::string ssh_user;                   ///< (ssh_user) makes a host on this machine SSH
  /// --heartbeat, the job's one liveness interval; 0 = off. It drives three things:
  /// ferryrun loses a host silent for 3 intervals; each ferryd loses ferryrun the same way
  /// (HostSpec::heartbeat_ms); and the SSH connections send keepalives this often.
  int heartbeat_s = 0;
  /// --detach, --nohup: a hangup (SIGHUP) does not end the job; its front end goes on
  /// without the terminal (session/job_session.hpp).
  bool ignore_hangup = false;
  /// Called once, when every rank of the first attempt has started (a detached job's
  /// parent returns then). Empty: nothing.
  std::function<void()> on_all_started;
  /// Offer every host reached over SSH a direct output route (transport/output_route.hpp):
  /// its output then bypasses sshd. FERRY_OUTPUT_ROUTE=ssh turns it off.
  bool direct_output = true;
  /// --max-restarts: after a failure, run the whole job again this many times at most.
  int max_restarts = 0;
  /// --min-hosts: a lost host leaves the job on the others if at least this many remain
  /// (0: every host is needed).
  int min_hosts = 0;
  /// horovodrun --min-np: the fewest ranks the job may shrink to (0: no floor).
  int min_ranks = 0;
  /// Started as horovodrun: the ranks are Horovod processes (HostSpec::horovod).
  bool horovod = false;

  /// horovodrun --host-discovery-script, or --min-np with fixed hosts, and its flags
  /// (docs/compat.md).
  ElasticOptions elastic;

  RestartLimits restart_limits() const { return {max_restarts, min_hosts, min_ranks}; }
};

}  // namespace ferry
