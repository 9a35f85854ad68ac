#include "ferry/binding/summary.hpp"

#include "ferry/binding/id_list.hpp"

namespace ferry {

namespace {

std::string count(int n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace

std::string TopologySummary::to_string() const {
  std::string s = count(packages, "package", "packages") + ", " +
                  count(numa_nodes, "NUMA node", "NUMA nodes") + ", " +
                  count(cores, "core", "cores") + ", " + count(hwthreads, "hwthread", "hwthreads") +
                  " (cpus " + cpus + ")";
  if (nvidia_gpus) s += ", " + count(nvidia_gpus, "NVIDIA GPU", "NVIDIA GPUs");
  if (ascend_npus) s += ", " + count(ascend_npus, "Ascend NPU", "Ascend NPUs");
  if (amd_gpus) s += ", " + count(amd_gpus, "AMD GPU", "AMD GPUs");
  if (intel_gpus) s += ", " + count(intel_gpus, "Intel GPU", "Intel GPUs");
  return s;
}

TopologySummary summarize(const Topology& topology, const std::vector<Accelerator>& devices) {
  TopologySummary s;
  s.packages = topology.package_count();
  s.numa_nodes = static_cast<int>(topology.numa_nodes().size());
  s.cores = static_cast<int>(topology.cores().size());
  const auto pus = topology.pus();
  s.hwthreads = static_cast<int>(pus.size());
  s.cpus = format_id_list(pus);
  for (const auto& d : devices) {
    switch (d.kind) {
      case AcceleratorKind::kNvidiaGpu:
        ++s.nvidia_gpus;
        break;
      case AcceleratorKind::kAscendNpu:
        ++s.ascend_npus;
        break;
      case AcceleratorKind::kAmdGpu:
        ++s.amd_gpus;
        break;
      case AcceleratorKind::kIntelGpu:
        ++s.intel_gpus;
        break;
    }
  }
  return s;
}

}  // namespace ferry
