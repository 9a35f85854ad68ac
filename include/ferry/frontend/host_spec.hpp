#pragma once
/// \file
/// One host's part of the job (wire::HostSpec), built from the job's options, the placement and
/// what the front end learnt while the hosts started. Pure: every rule about what a host gets is
/// tested without a host.

#include <string>
#include <vector>

#include "ferry/frontend/job_options.hpp"
#include "ferry/plan/placement.hpp"
#include "ferry/wire/messages.hpp"

namespace ferry {

/// What every host's spec shares, known once every host said Hello.
struct SharedSpec {
  std::string job_id;
  std::vector<std::string> env;     ///< job_environment(): for every rank of every host
  std::string secret;               ///< the job secret ferryd's KV proxy asks of the ranks
  std::string pmi_process_mapping;  ///< PMI_process_mapping of the whole placement
  uint32_t attempt = 0;             ///< which run of the job (stdin goes to the first only)
  bool restartable = false;         ///< ferryd keeps serving after Done; error files on
  /// PMIx: every host's name as its ferryd reported it, in placement order, and each rank's
  /// host index (empty: no PMIx).
  std::vector<std::string> node_names{};
  std::vector<uint32_t> node_of_rank{};
};

/// A fresh random job id (16 hex digits): FERRY_JOB_ID, and the PMI kvsname.
std::string new_job_id();

/// One host's own inputs besides its plan.
struct HostInputs {
  const HostPlan* plan = nullptr;  ///< the host and its ranks (an element of the placement)
  bool local = false;              ///< started without SSH (see decide_host_reach)
  /// NIC and Horovod variables for this host's ranks (RendezvousService::host_environment).
  std::vector<std::string> env;
  uint32_t index = 0;  ///< the host's index in the placement
};

/// The devices `host`'s ranks may use: its own `host_devices` entry (same name, user and port; two
/// containers behind one address are two hosts), else the job's binding.devices.
const std::vector<int>& devices_for_host(const JobOptions& opts, const HostEntry& host);

/// The HostSpec for one host: the command; wdir (a remote host without an explicit wdir falls
/// back to $HOME when it lacks it); the shared environment, then the host's; each rank's own
/// variables (and `--local-rank=N` with torch_local_rank_arg); the stdin rank when it is one of
/// this host's; the binding with this host's devices; the kill grace; the heartbeat interval
/// (JobOptions::heartbeat_s: ferryd watches ferryrun with it too).
/// One rank's launch entry: its variables (rank_environment), and its arguments: with
/// JobOptions::expand_args the command's arguments with their placeholders replaced (the
/// spec's argv is then the program alone; `job_env` gives MASTER_ADDR and MASTER_PORT), then
/// the local-rank argument with torch_local_rank_arg.
wire::RankLaunch rank_launch(const JobOptions& opts, const Placement& placement,
                             const HostPlan& plan, const RankSlot& r,
                             const std::vector<std::string>& job_env);

/// The job's placement: place_ranks over the hosts, or with MPMD parts place_apps.
Result<Placement> place_job(const JobOptions& opts);

wire::HostSpec make_host_spec(const JobOptions& opts, const Placement& placement,
                              const HostInputs& host, const SharedSpec& shared);

}  // namespace ferry
