#include "ferry/binding/device_assignment.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "ferry/binding/id_list.hpp"

namespace ferry {

namespace {

std::string join_indices(const std::vector<Accelerator>& devs) {
  std::string out;
  for (const auto& d : devs) out += (out.empty() ? "" : ",") + std::to_string(d.index);
  return out;
}

std::string join_ints(const std::vector<int>& v) {
  std::string out;
  for (int i : v) out += (out.empty() ? "" : ",") + std::to_string(i);
  return out;
}

// "8 NVIDIA GPUs" / "1 Ascend NPU".
std::string count_of(size_t n, AcceleratorKind kind) {
  return std::to_string(n) + " " + accelerator_kind_name(kind) + (n == 1 ? "" : "s");
}

// The NUMA node a device is local to: sysfs numa_node, else the single node its
// local_cpulist falls in (among the CPUs this host lets us use).
int device_numa(const Accelerator& a, const std::map<int, int>& pu_numa) {
  if (a.numa_node >= 0) return a.numa_node;
  std::set<int> nodes;
  for (int cpu : a.local_cpus)
    if (auto it = pu_numa.find(cpu); it != pu_numa.end()) nodes.insert(it->second);
  return nodes.size() == 1 ? *nodes.begin() : -1;
}

// Takes the user's "2,3" as the host list; nullopt when it is not a list of known indices
// (GPU UUIDs, MIG names): ferry then knows nothing of which device a rank uses.
std::optional<std::vector<Accelerator>> user_list(const std::string& value,
                                                  const std::vector<Accelerator>& all) {
  std::vector<Accelerator> out;
  size_t start = 0;
  if (value.empty()) return out;
  while (start <= value.size()) {
    size_t comma = value.find(',', start);
    if (comma == std::string::npos) comma = value.size();
    auto ids = parse_id_list(value.substr(start, comma - start));
    if (!ids || ids->size() != 1) return std::nullopt;
    auto it = std::find_if(all.begin(), all.end(),
                           [&](const Accelerator& a) { return a.index == ids->front(); });
    if (it == all.end()) return std::nullopt;
    out.push_back(*it);
    start = comma + 1;
  }
  return out;
}

}  // namespace

Result<DeviceAssignment> assign_devices(const Topology& topology,
                                        const std::vector<Accelerator>& accelerators,
                                        const BindingOptions& options, int local_ranks,
                                        const EnvLookup& user_env) {
  DeviceAssignment out;
  const int L = std::max(local_ranks, 0);
  out.rank_devices.assign(L, {});
  out.rank_numa.assign(L, -1);
  out.rank_env.assign(L, {});

  // One kind per host: the first found of NVIDIA, Ascend, AMD.
  std::vector<Accelerator> all;
  for (auto kind :
       {AcceleratorKind::kNvidiaGpu, AcceleratorKind::kAscendNpu, AcceleratorKind::kAmdGpu}) {
    std::vector<Accelerator> of_kind;
    for (const auto& a : accelerators)
      if (a.kind == kind) of_kind.push_back(a);
    if (of_kind.empty()) continue;
    if (all.empty()) {
      all = std::move(of_kind);
    } else {
      out.notes.push_back("also found " + count_of(of_kind.size(), kind) + "; ferry assigns only " +
                          accelerator_kind_name(all.front().kind) + "s");
    }
  }
  std::sort(all.begin(), all.end(),
            [](const Accelerator& x, const Accelerator& y) { return x.index < y.index; });

  if (all.empty()) {
    if (options.devices_per_rank > 0 || !options.devices.empty())
      return make_error(
          "no accelerators found on this host (no NVIDIA GPU in "
          "/proc/driver/nvidia/gpus, no /dev/davinciN, no AMD GPU under /dev/kfd)");
    return out;
  }
  const AcceleratorKind kind = all.front().kind;
  const std::string var = visible_devices_variable(kind);
  std::vector<int> all_indices;
  for (const auto& a : all) all_indices.push_back(a.index);
  const std::string have = format_id_list(all_indices);

  std::vector<Accelerator> visible = all;
  if (!options.devices.empty()) {
    visible.clear();
    std::set<int> seen;
    for (int d : options.devices) {
      auto it =
          std::find_if(all.begin(), all.end(), [&](const Accelerator& a) { return a.index == d; });
      if (it == all.end())
        return make_error("--devices " + std::to_string(d) + ": this host has " +
                          count_of(all.size(), kind) + " (" + have + ")");
      if (!seen.insert(d).second)
        return make_error("--devices names " + std::to_string(d) + " twice");
      visible.push_back(*it);
    }
  }
  const auto user_value = user_env(var);
  bool ferry_sets_var = true;
  if (user_value) {
    ferry_sets_var = false;
    if (!options.devices.empty())
      out.warnings.push_back("--devices ignored: " + var + "=" + *user_value + " is set");
    if (auto list = user_list(*user_value, all)) {
      visible = std::move(*list);
      out.notes.push_back(var + "=" + *user_value + " set by the user: ranks use those devices");
    } else {
      visible.clear();
      out.notes.push_back(var + "=" + *user_value +
                          " set by the user (not a list of indices): no device locality");
    }
  }
  out.visible = visible;
  const int D = static_cast<int>(visible.size());

  if (options.devices_per_rank >= 0) {
    out.per_rank = options.devices_per_rank;
    if (out.per_rank > 0 && static_cast<long long>(out.per_rank) * L > D)
      return make_error("--devices-per-rank " + std::to_string(out.per_rank) + " for " +
                        std::to_string(L) + " local ranks needs " +
                        std::to_string(static_cast<long long>(out.per_rank) * L) + " " +
                        accelerator_kind_name(kind) + "s; " + std::to_string(D) + " available (" +
                        var + " list " + join_indices(visible) + ")");
  } else {
    out.per_rank = (D > 0 && D >= L) ? 1 : 0;
    if (D > 0 && D < L)
      out.notes.push_back(std::to_string(L) + " local ranks share " + count_of(D, kind) +
                          ": none assigned per rank, all visible to all");
  }

  std::map<int, int> pu_numa;
  for (const auto& core : topology.cores())
    for (int pu : core.pus) pu_numa[pu] = core.numa;
  for (int r = 0; r < L && out.per_rank > 0; ++r) {
    for (int k = 0; k < out.per_rank; ++k)
      out.rank_devices[r].push_back(visible[r * out.per_rank + k].index);
    out.rank_numa[r] = device_numa(visible[r * out.per_rank], pu_numa);
  }

  if (options.isolate_devices && out.per_rank == 0 && options.devices_per_rank < 0 && D > 0) {
    out.warnings.push_back("--isolate-devices ignored: " + std::to_string(L) + " local ranks and " +
                           count_of(D, kind) + ", so no device per rank");
  }
  // Only say something when there is something to say: a device per rank or a --devices
  // restriction (left unset, the runtime shows every device anyway, in its own order).
  const bool isolate =
      options.isolate_devices && (out.per_rank > 0 || options.devices_per_rank == 0);
  if (ferry_sets_var && (out.per_rank > 0 || !options.devices.empty() || isolate)) {
    for (int r = 0; r < L; ++r) {
      const std::string list = isolate ? join_ints(out.rank_devices[r]) : join_indices(visible);
      out.rank_env[r].push_back(var + "=" + list);
      // CUDA numbers devices fastest-first by default; indices here are PCI bus order.
      if (kind == AcceleratorKind::kNvidiaGpu && !user_env("CUDA_DEVICE_ORDER"))
        out.rank_env[r].push_back("CUDA_DEVICE_ORDER=PCI_BUS_ID");
    }
  }
  return out;
}

}  // namespace ferry
