#pragma once
/// \file
/// The rendezvous variables each rank gets (docs/frameworks.md), as "K=V" lists the front end
/// and ferryd merge into a rank's environment: NIC selection, Horovod's gloo rendezvous,
/// MPICH's PMI-1, and the legacy torch.distributed.launch `--local-rank` argument (Ascend's
/// RANK_ID/RANK_SIZE come with the device binding: binding/host_binder.hpp).

#include <cstdint>
#include <string>
#include <vector>

#include "ferry/rendezvous/nic_choice.hpp"

namespace ferry {

/// Interface variables for host `host` of `choice`: NCCL_SOCKET_IFNAME and
/// HCCL_SOCKET_IFNAME as exact matches ("=eth0": NCCL syntax, so eth0 does not also select
/// eth0.100 or eth01), GLOO_SOCKET_IFNAME, HOROVOD_GLOO_IFACE and TP_SOCKET_IFNAME as the
/// name. Nothing when no interface was chosen; each variable is skipped when `user_env`
/// already sets it.
std::vector<std::string> nic_environment(const NicChoice& choice, std::size_t host,
                                         const std::vector<std::string>& user_env);

/// Horovod's gloo rendezvous through this host's ferryd (`runner/gloo_run.py`):
/// HOROVOD_GLOO_RENDEZVOUS_ADDR=127.0.0.1, HOROVOD_GLOO_RENDEZVOUS_PORT=`port`,
/// HOROVOD_CONTROLLER=gloo, HOROVOD_CPU_OPERATIONS=gloo (the last two unless `user_env` sets
/// them), and FERRY_JOB_SECRET=`secret`, which the KV proxy requires of its clients.
std::vector<std::string> horovod_environment(uint16_t port, const std::string& secret,
                                             const std::vector<std::string>& user_env);

/// MPICH PMI-1 variables of one rank: PMI_FD (its socketpair end), PMI_RANK, PMI_SIZE,
/// PMI_HOSTNAME, MPI_LOCALRANKID, MPI_LOCALNRANKS. Never PMIX_*: ferry serves PMI-1 only.
std::vector<std::string> pmi_environment(int fd, int rank, int size, const std::string& hostname,
                                         int local_rank, int local_size);

/// How legacy torch.distributed.launch passed the local rank: `--local-rank=N` (torch >= 2.0)
/// or `--local_rank=N` (older; argparse treats the spellings as different options).
enum class LocalRankArgStyle { kDash, kUnderscore };

/// `argv` with the local-rank argument appended (`--torch-local-rank-arg`).
std::vector<std::string> with_local_rank_arg(std::vector<std::string> argv, int local_rank,
                                             LocalRankArgStyle style = LocalRankArgStyle::kDash);

}  // namespace ferry
