#include "ferry/rendezvous/framework_env.hpp"

#include "ferry/common/environ.hpp"
#include "ferry/rendezvous/peer_auth.hpp"

namespace ferry {
namespace {

void add_unless_set(std::vector<std::string>& out, const std::vector<std::string>& user_env,
                    std::string_view name, const std::string& value) {
  if (!env_value(user_env, name)) out.push_back(std::string(name) + "=" + value);
}

}  // namespace

std::vector<std::string> nic_environment(const NicChoice& choice, std::size_t host,
                                         const std::vector<std::string>& user_env) {
  std::vector<std::string> out;
  if (!choice.chosen || host >= choice.iface.size() || choice.iface[host].empty()) return out;
  const std::string& name = choice.iface[host];
  const std::string nccl = choice.nccl_spec.empty() ? "=" + name : choice.nccl_spec;
  add_unless_set(out, user_env, "NCCL_SOCKET_IFNAME", nccl);
  add_unless_set(out, user_env, "GLOO_SOCKET_IFNAME", name);  // names only
  add_unless_set(out, user_env, "HCCL_SOCKET_IFNAME", nccl);
  add_unless_set(out, user_env, "HOROVOD_GLOO_IFACE", name);
  add_unless_set(out, user_env, "TP_SOCKET_IFNAME", name);
  return out;
}

std::vector<std::string> horovod_environment(uint16_t port, const std::string& secret,
                                             const std::vector<std::string>& user_env) {
  std::vector<std::string> out = {
      "HOROVOD_GLOO_RENDEZVOUS_ADDR=127.0.0.1",
      "HOROVOD_GLOO_RENDEZVOUS_PORT=" + std::to_string(port),
  };
  add_unless_set(out, user_env, "HOROVOD_CONTROLLER", "gloo");
  add_unless_set(out, user_env, "HOROVOD_CPU_OPERATIONS", "gloo");
  out.push_back(std::string(kJobSecretVar) + "=" + secret);
  return out;
}

std::vector<std::string> pmi_environment(int fd, int rank, int size, const std::string& hostname,
                                         int local_rank, int local_size) {
  return {
      "PMI_FD=" + std::to_string(fd),
      "PMI_RANK=" + std::to_string(rank),
      "PMI_SIZE=" + std::to_string(size),
      "PMI_HOSTNAME=" + hostname,
      "MPI_LOCALRANKID=" + std::to_string(local_rank),
      "MPI_LOCALNRANKS=" + std::to_string(local_size),
  };
}

std::vector<std::string> with_local_rank_arg(std::vector<std::string> argv, int local_rank,
                                             LocalRankArgStyle style) {
  argv.push_back((style == LocalRankArgStyle::kDash ? "--local-rank=" : "--local_rank=") +
                 std::to_string(local_rank));
  return argv;
}

}  // namespace ferry
