#include "ferry/binding/report.hpp"

namespace ferry {

namespace {

constexpr const char* kShownVariables[] = {"CUDA_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES",
                                           "ROCR_VISIBLE_DEVICES", "ZE_AFFINITY_MASK", "DEVICE_ID"};

bool sets_thread_variable(const RankBinding& b) {
  for (const auto& kv : b.env)
    for (const char* name : {"OMP_NUM_THREADS=", "MKL_NUM_THREADS=", "OPENBLAS_NUM_THREADS="})
      if (kv.starts_with(name)) return true;
  return false;
}

}  // namespace

std::string format_binding_report(std::string_view host, int rank, const RankBinding& b,
                                  const HostBindingPlan& plan) {
  std::string line(host);
  line += " rank " + std::to_string(rank) + " local_rank " + std::to_string(b.local_rank) + ": ";
  const std::string cores = std::to_string(b.cores) + (b.cores == 1 ? " core" : " cores");
  if (b.bound) {
    line += "cpus " + b.cpu_list + " (" + cores + ")";
  } else {
    line += "not bound (cpus " + b.cpu_list + ", " + cores + ")";
  }
  line += " NUMA " + b.numa_list;
  if (b.bind_mem) line += " mem bound";
  if (b.devices.empty()) {
    line += ", no device";
  } else {
    for (int index : b.devices) {
      for (const auto& d : plan.devices) {
        if (d.index != index) continue;
        line += std::string(", ") + accelerator_kind_name(d.kind) + " " + std::to_string(index);
        if (!d.pci_address.empty() || d.numa_node >= 0) {
          line += " [";
          if (!d.pci_address.empty()) line += d.pci_address;
          if (d.numa_node >= 0)
            line += (d.pci_address.empty() ? "NUMA " : " NUMA ") + std::to_string(d.numa_node);
          line += "]";
        }
      }
    }
  }
  // What the rank is told about its devices, as ferry set it: the kind's visible-devices
  // variable and, for Ascend, the device id it should open.
  for (const auto& kv : b.env) {
    const std::string_view name = std::string_view(kv).substr(0, kv.find('='));
    for (const char* shown : kShownVariables)
      if (name == shown) line += ", " + kv;
  }
  // The thread count follows from the cores shown, except when the CPU quota lowered it.
  if (b.threads_capped_by_quota && plan.cpu_quota && sets_thread_variable(b))
    line += ", " + std::to_string(b.threads) + (b.threads == 1 ? " thread" : " threads") +
            " (CPU quota " + plan.cpu_quota->cpus_text() + ")";
  return line;
}

}  // namespace ferry
