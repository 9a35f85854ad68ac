#include "ferry/plan/environment.hpp"

#include <algorithm>

#include "ferry/common/environ.hpp"

namespace ferry {
namespace {

std::string kv(const char* k, const std::string& v) { return std::string(k) + "=" + v; }
std::string kv(const char* k, int v) { return kv(k, std::to_string(v)); }

bool exported(const std::vector<std::string>& ex, std::string_view name) {
  return env_value(ex, name).has_value();
}

}  // namespace

std::vector<std::string> job_environment(const Placement& p, const JobEnvironment& in) {
  std::vector<std::string> env;
  const int nodes = static_cast<int>(p.hosts.size());
  // Soft defaults first: the user's -x may override them.
  if (!exported(in.exported, "MASTER_ADDR")) env.push_back(kv("MASTER_ADDR", in.master_addr));
  if (!exported(in.exported, "MASTER_PORT")) env.push_back(kv("MASTER_PORT", in.master_port));
  if (!exported(in.exported, "PYTHONUNBUFFERED")) env.emplace_back("PYTHONUNBUFFERED=1");
  env.insert(env.end(), in.exported.begin(), in.exported.end());
  // Sizes identify the job: always ferry's.
  env.push_back(kv("WORLD_SIZE", p.world_size));
  env.push_back(kv("GROUP_WORLD_SIZE", nodes));
  env.push_back(kv("ROLE_WORLD_SIZE", p.world_size));
  env.push_back(kv("HOROVOD_SIZE", p.world_size));
  env.push_back(kv("OMPI_COMM_WORLD_SIZE", p.world_size));
  env.push_back(kv("CROSS_SIZE", nodes));
  return env;
}

std::vector<std::string> elastic_environment(const ElasticEnvironment& in,
                                             const std::vector<std::string>& exported_vars,
                                             const char* (*lookup)(const char*)) {
  std::vector<std::string> env{
      kv("TORCHELASTIC_RESTART_COUNT", in.restart_count),
      kv("TORCHELASTIC_MAX_RESTARTS", in.max_restarts),
      "TORCHELASTIC_RUN_ID=" + in.run_id,
      "TORCHELASTIC_USE_AGENT_STORE=False",
  };
  for (const char* name : {"NCCL_ASYNC_ERROR_HANDLING", "TORCH_NCCL_ASYNC_ERROR_HANDLING"})
    if (!exported(exported_vars, name) && !(lookup && lookup(name)))
      env.push_back(std::string(name) + "=1");
  return env;
}

std::vector<std::string> rank_environment([[maybe_unused]] const Placement& p, const HostPlan& host,
                                          const RankSlot& r) {
  return {
      kv("RANK", r.rank),
      kv("LOCAL_RANK", r.local_rank),
      kv("LOCAL_WORLD_SIZE", r.local_size),
      kv("LOCAL_SIZE", r.local_size),
      kv("GROUP_RANK", r.node_rank),
      kv("ROLE_RANK", r.rank),
      kv("CROSS_RANK", r.node_rank),
      kv("HOROVOD_RANK", r.rank),
      kv("HOROVOD_LOCAL_RANK", r.local_rank),
      kv("HOROVOD_LOCAL_SIZE", r.local_size),
      kv("HOROVOD_CROSS_RANK", r.cross_rank),
      kv("HOROVOD_CROSS_SIZE", r.cross_size),
      kv("HOROVOD_HOSTNAME", host.label),
      kv("OMPI_COMM_WORLD_RANK", r.rank),
      kv("OMPI_COMM_WORLD_LOCAL_RANK", r.local_rank),
      kv("OMPI_COMM_WORLD_LOCAL_SIZE", r.local_size),
      kv("OMPI_COMM_WORLD_NODE_RANK", r.node_rank),
  };
}

std::vector<std::string> overridden_exports(const std::vector<std::string>& exports) {
  std::vector<std::string> own{"WORLD_SIZE",   "GROUP_WORLD_SIZE",     "ROLE_WORLD_SIZE",
                               "HOROVOD_SIZE", "OMPI_COMM_WORLD_SIZE", "CROSS_SIZE"};
  for (const auto& item : rank_environment(Placement{}, HostPlan{}, RankSlot{}))
    own.push_back(item.substr(0, item.find('=')));
  std::vector<std::string> out;
  for (const auto& item : exports) {
    std::string name = item.substr(0, item.find('='));
    if (std::find(own.begin(), own.end(), name) != own.end() &&
        std::find(out.begin(), out.end(), name) == out.end())
      out.push_back(std::move(name));
  }
  return out;
}

Result<std::vector<std::string>> resolve_exports(const std::vector<std::string>& items,
                                                 const char* (*lookup)(const char*),
                                                 std::vector<std::string>& warnings) {
  std::vector<std::string> out;
  for (const auto& item : items) {
    auto eq = item.find('=');
    std::string name = item.substr(0, eq);
    if (!is_variable_name(name))
      return make_error("-x: '" + item + "' is not VAR or VAR=value (bad variable name)");
    if (eq != std::string::npos) {
      out.push_back(item);
    } else if (const char* v = lookup(name.c_str())) {
      out.push_back(name + "=" + v);
    } else {
      warnings.push_back("-x " + name + ": not set in this environment, not exported");
    }
  }
  return out;
}

}  // namespace ferry
