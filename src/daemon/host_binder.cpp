#include "ferry/daemon/host_binder.hpp"

#include "ferry/binding/apply.hpp"
#include "ferry/binding/env_lookup.hpp"
#include "ferry/binding/summary.hpp"

namespace ferry {

void HostBinder::load(const std::string& device_root) {
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
  auto plan = plan_bindings(*topology_, devices_, options, local_ranks, env_lookup_from(user_env));
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

std::string HostBinder::summary() const {
  if (!topology_) return "no CPU topology (" + load_error_ + ")";
  return summarize(*topology_, devices_).to_string();
}

}  // namespace ferry
