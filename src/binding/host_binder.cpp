#include "ferry/binding/host_binder.hpp"

#include <algorithm>
#include <cstdlib>

#include "ferry/binding/apply.hpp"
#include "ferry/binding/env_lookup.hpp"
#include "ferry/binding/slot_list.hpp"
#include "ferry/binding/summary.hpp"
#include "ferry/common/environ.hpp"

namespace ferry {

std::vector<std::string> ascend_rank_environment(int rank, int world_size,
                                                 const std::vector<std::string>& user_env) {
  std::vector<std::string> out;
  if (!env_value(user_env, "RANK_ID")) out.push_back("RANK_ID=" + std::to_string(rank));
  if (!env_value(user_env, "RANK_SIZE")) out.push_back("RANK_SIZE=" + std::to_string(world_size));
  return out;
}

void HostBinder::load(const std::string& device_root) {
  // Read even without a topology: it is part of what summary() reports.
  cpu_quota_ = read_cpu_quota(device_root);
  auto topo = Topology::load_system();
  if (!topo) {
    load_error_ = topo.error().message;
    return;
  }
  topology_.emplace(std::move(topo.value()));
  auto devs = discover_accelerators(device_root);
  if (devs) devices_ = std::move(devs.value());
}

Result<HostBindingPlan> HostBinder::plan(const BindingOptions& options, int local_ranks,
                                         const std::vector<std::string>& user_env,
                                         const std::string& host, bool verbose,
                                         std::vector<std::string>& lines) {
  if (!topology_) {
    if (options.bind_to != BindTo::kDefault && options.bind_to != BindTo::kNone)
      lines.push_back(host + ": warning: cannot read the CPU topology (" + load_error_ +
                      "); ranks run unbound");
    HostBindingPlan none;
    none.ranks.resize(static_cast<size_t>(local_ranks));
    return none;
  }
  auto plan = plan_bindings(*topology_, devices_, options, local_ranks, env_lookup_from(user_env),
                            cpu_quota_);
  if (!plan) return make_error(host + ": " + plan.error().message);
  if (options.bind_mem && !plan->ranks.empty()) {
    if (auto probe = probe_memory_binding(plan->ranks.front()); !probe)
      disable_memory_binding(*plan, probe.error().message);
  }
  for (const auto& w : plan->warnings) lines.push_back(host + ": warning: " + w);
  if (verbose) {
    lines.push_back(host + ": " + summary());
    lines.push_back(host + ": binding " + plan->policy);
    for (const auto& n : plan->notes) lines.push_back(host + ": " + n);
  }
  return plan;
}

Result<HostBindingPlan> HostBinder::plan(const BindingOptions& options,
                                         const std::vector<int>& global_ranks, int world_size,
                                         const std::vector<std::string>& user_env,
                                         const std::string& host, bool verbose,
                                         std::vector<std::string>& lines) {
  auto result =
      plan(options, static_cast<int>(global_ranks.size()), user_env, host, verbose, lines);
  if (!result) return result;
  HostBindingPlan& p = result.value();
  bool ascend = false;
  if (p.device_kind) {
    ascend = *p.device_kind == AcceleratorKind::kAscendNpu;
  } else {
    // No topology, so no device assignment ran: go by what discovery found.
    ascend = env_value(user_env, "ASCEND_RT_VISIBLE_DEVICES").has_value() ||
             std::any_of(devices_.begin(), devices_.end(), [](const Accelerator& a) {
               return a.kind == AcceleratorKind::kAscendNpu;
             });
  }
  if (!ascend) return result;
  const EnvLookup lookup = env_lookup_from(user_env);
  if (auto id = lookup("RANK_ID"); id && world_size > 1)
    lines.push_back(host + ": warning: RANK_ID=" + *id +
                    " set by the user: every rank gets it, not its global rank");
  if (auto size = lookup("RANK_SIZE"); size && *size != std::to_string(world_size))
    lines.push_back(host + ": warning: RANK_SIZE=" + *size + " set by the user, but the job has " +
                    std::to_string(world_size) + " ranks");
  for (size_t k = 0; k < p.ranks.size() && k < global_ranks.size(); ++k) {
    auto vars = ascend_rank_environment(global_ranks[k], world_size, user_env);
    p.ranks[k].env.insert(p.ranks[k].env.end(), vars.begin(), vars.end());
  }
  return result;
}

std::vector<int> HostBinder::socket_cores() const {
  return topology_ ? socket_core_counts(*topology_) : std::vector<int>{};
}

std::string HostBinder::summary() const {
  const std::string quota = cpu_quota_ ? "; CPU quota " + cpu_quota_->cpus_phrase() : std::string();
  if (!topology_) return "no CPU topology (" + load_error_ + ")" + quota;
  return summarize(*topology_, devices_).to_string() + quota;
}

}  // namespace ferry
