#include "ferry/binding/device_assignment.hpp"

#include <algorithm>
#include <map>
#include <optional>
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

constexpr AcceleratorKind kKinds[] = {AcceleratorKind::kNvidiaGpu, AcceleratorKind::kAscendNpu,
                                      AcceleratorKind::kAmdGpu, AcceleratorKind::kIntelGpu};

// A variable the user set that renumbers `kind`'s devices on top of ferry's variable, as
// "NAME=value"; "" when none. ROCm: HIP (and CUDA_VISIBLE_DEVICES, which HIP also reads) and
// ROCclr (GPU_DEVICE_ORDINAL) index the GPUs ROCR_VISIBLE_DEVICES left visible. oneAPI:
// ONEAPI_DEVICE_SELECTOR picks among the devices ZE_AFFINITY_MASK left; without a digit it
// only names backends or types ("level_zero:gpu") and renumbers nothing.
std::string renumbering_variable(AcceleratorKind kind, const EnvLookup& user_env) {
  std::vector<const char*> names;
  if (kind == AcceleratorKind::kAmdGpu)
    names = {"HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL"};
  if (kind == AcceleratorKind::kIntelGpu) names = {"ONEAPI_DEVICE_SELECTOR"};
  for (const char* name : names) {
    auto v = user_env(name);
    if (!v) continue;
    if (kind == AcceleratorKind::kIntelGpu &&
        std::none_of(v->begin(), v->end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    return std::string(name) + "=" + *v;
  }
  return "";
}

// Why ZE_AFFINITY_MASK indices cannot be tied to the Intel GPUs found; "" when they can.
// With ZE_ENABLE_PCI_ID_DEVICE_ORDER=1 Level Zero numbers its root devices in PCI bus order
// (compute-runtime sortNeoDevices), and a root device is a card when every card has one tile
// (FLAT and COMPOSITE hierarchies then agree). A multi-tile card is one device or several
// depending on ZE_FLAT_DEVICE_HIERARCHY and on the driver release's default, and whether an
// integrated GPU is listed at all depends on the release's supported platforms.
std::string intel_numbering_problem(const std::vector<Accelerator>& all,
                                    const EnvLookup& user_env) {
  for (const auto& a : all) {
    if (a.tiles == 1) continue;
    return "Intel GPU " + a.pci_address +
           (a.tiles > 1 ? " has " + std::to_string(a.tiles) + " tiles"
                        : " may have several tiles") +
           ": Level Zero numbers tiles or cards depending on ZE_FLAT_DEVICE_HIERARCHY and the "
           "driver release";
  }
  if (all.size() < 2) return "";
  const bool integrated =
      std::any_of(all.begin(), all.end(), [](const Accelerator& a) { return a.integrated; });
  const bool discrete =
      std::any_of(all.begin(), all.end(), [](const Accelerator& a) { return !a.integrated; });
  if (integrated && discrete)
    return "an integrated Intel GPU next to discrete ones: whether Level Zero lists it (and so "
           "the discrete GPUs' numbers) depends on the driver release";
  if (auto v = user_env("ZE_ENABLE_PCI_ID_DEVICE_ORDER"); v && *v != "1")
    return "ZE_ENABLE_PCI_ID_DEVICE_ORDER=" + *v +
           " set by the user: Level Zero's device order is then not PCI bus order";
  return "";
}

// ---- the steps of assign_devices() ----------------------------------------------------------

bool by_index(const Accelerator& x, const Accelerator& y) { return x.index < y.index; }

// The one kind a host's ranks use: the first found of NVIDIA, Ascend, AMD, Intel, unless the
// user set the visible-devices variable of another kind this host has (that is the user's
// choice); with none found, the kind whose variable the user set. nullopt: none at all.
std::optional<AcceleratorKind> choose_kind(const std::vector<Accelerator>& accelerators,
                                           const EnvLookup& user_env) {
  std::optional<AcceleratorKind> first_found, user_found, user_set_any;
  for (auto kind : kKinds) {
    const bool found = std::any_of(accelerators.begin(), accelerators.end(),
                                   [&](const Accelerator& a) { return a.kind == kind; });
    const bool user_set = user_env(visible_devices_variable(kind)).has_value();
    if (found && !first_found) first_found = kind;
    if (found && user_set && !user_found) user_found = kind;
    if (user_set && !user_set_any) user_set_any = kind;
  }
  return user_found ? user_found : (first_found ? first_found : user_set_any);
}

// The devices of `chosen`, by index; a note names each other kind found (left alone).
std::vector<Accelerator> devices_of_kind(const std::vector<Accelerator>& accelerators,
                                         std::optional<AcceleratorKind> chosen,
                                         std::vector<std::string>& notes) {
  std::vector<Accelerator> all;
  for (auto kind : kKinds) {
    std::vector<Accelerator> of_kind;
    for (const auto& a : accelerators)
      if (a.kind == kind) of_kind.push_back(a);
    if (of_kind.empty()) continue;
    if (kind == *chosen) {
      all = std::move(of_kind);
    } else {
      notes.push_back("also found " + count_of(of_kind.size(), kind) + "; ferry assigns only " +
                      accelerator_kind_name(*chosen) + "s");
    }
  }
  std::sort(all.begin(), all.end(), by_index);
  return all;
}

// The host list ranks see under `--devices` (all of `all` without it). Errors: an index the
// host lacks, an index named twice.
Result<std::vector<Accelerator>> devices_option_list(const std::vector<Accelerator>& all,
                                                     const BindingOptions& options,
                                                     const std::string& var,
                                                     std::vector<std::string>& notes) {
  if (options.devices.empty()) return all;
  const AcceleratorKind kind = all.front().kind;
  std::vector<int> all_indices;
  all_indices.reserve(all.size());
  for (const auto& a : all) all_indices.push_back(a.index);
  std::vector<Accelerator> visible;
  std::set<int> seen;
  for (int d : options.devices) {
    auto it =
        std::find_if(all.begin(), all.end(), [&](const Accelerator& a) { return a.index == d; });
    if (it == all.end())
      return make_error("--devices " + std::to_string(d) + ": this host has " +
                        count_of(all.size(), kind) + " (" + format_id_list(all_indices) + ")");
    if (!seen.insert(d).second)
      return make_error("--devices names " + std::to_string(d) + " twice");
    visible.push_back(*it);
  }
  if (kind == AcceleratorKind::kAscendNpu &&
      !std::is_sorted(visible.begin(), visible.end(), by_index)) {
    // CANN supports ASCEND_RT_VISIBLE_DEVICES only in ascending order (envref_07_0028);
    // with "1,0" torch_npu reports no NPU at all.
    std::sort(visible.begin(), visible.end(), by_index);
    notes.push_back("--devices put in ascending order: " + var +
                    " must list devices in ascending order");
  }
  return visible;
}

// What the ranks see after the user's own variables: the list, whether ferry sets the
// visible-devices variable, and why no device can be given when the list is empty.
struct Visibility {
  std::vector<Accelerator> visible;
  bool ferry_sets_var = true;
  std::string why_none;                   // why no device can be assigned although found
  std::optional<std::string> user_value;  // the user's value of the visible-devices variable
};

// Applies the user's visible-devices variable, a variable that renumbers the devices it
// leaves, and Intel device numbering ferry cannot tie to the cards found.
Visibility apply_user_variables(std::vector<Accelerator> visible,
                                const std::vector<Accelerator>& all, const BindingOptions& options,
                                const EnvLookup& user_env, DeviceAssignment& out) {
  const AcceleratorKind kind = all.front().kind;
  const std::string var = visible_devices_variable(kind);
  Visibility v{std::move(visible), true, "", user_env(var)};
  if (v.user_value) {
    v.ferry_sets_var = false;
    const std::string set = var + "=" + *v.user_value;
    if (!options.devices.empty()) out.warnings.push_back("--devices ignored: " + set + " is set");
    if (auto list = user_list(*v.user_value, all)) {
      v.visible = std::move(*list);
      out.notes.push_back(set + " set by the user: ranks use those devices");
    } else {
      v.visible.clear();
      v.why_none = set + " set by the user is not a list of indices";
      out.notes.push_back(set + " set by the user (not a list of indices): no device locality");
    }
  }
  if (const std::string other = renumbering_variable(kind, user_env); !other.empty()) {
    if (v.ferry_sets_var && !options.devices.empty())
      out.warnings.push_back("--devices ignored: " + other + " is set");
    v.ferry_sets_var = false;
    v.visible.clear();
    v.why_none = other + " set by the user renumbers the devices " + var + " leaves visible";
    out.notes.push_back(other + " set by the user: ferry sets no " + var +
                        " (that would renumber the devices twice); no device locality");
  }
  if (kind != AcceleratorKind::kIntelGpu) return v;
  if (const std::string problem = intel_numbering_problem(all, user_env); !problem.empty()) {
    if (v.ferry_sets_var && !options.devices.empty())
      out.warnings.push_back("--devices ignored: " + problem);
    out.notes.push_back(problem + (v.ferry_sets_var ? "; ferry sets no " + var +
                                                          " and assigns no device (set it yourself)"
                                                    : "; no device locality"));
    v.ferry_sets_var = false;
    v.visible.clear();
    v.why_none = problem;
  }
  return v;
}

// Devices per rank: --devices-per-rank, else 1 when there are enough for every rank, else 0
// (with a note). Errors: more asked than visible, or asked where none can be given.
Result<int> devices_per_rank(const BindingOptions& options, int L, const Visibility& v,
                             AcceleratorKind kind, std::vector<std::string>& notes) {
  const int D = static_cast<int>(v.visible.size());
  const std::string var = visible_devices_variable(kind);
  if (options.devices_per_rank < 0) {
    if (D > 0 && D < L)
      notes.push_back(std::to_string(L) + " local ranks share " + count_of(D, kind) +
                      ": none assigned per rank, all visible to all");
    return (D > 0 && D >= L) ? 1 : 0;
  }
  const int per_rank = options.devices_per_rank;
  if (per_rank > 0 && D == 0 && !v.why_none.empty())
    return make_error("--devices-per-rank " + std::to_string(per_rank) + ": no " +
                      accelerator_kind_name(kind) + " can be assigned: " + v.why_none);
  if (per_rank > 0 && static_cast<long long>(per_rank) * L > D)
    return make_error("--devices-per-rank " + std::to_string(per_rank) + " for " +
                      std::to_string(L) + " local ranks needs " +
                      std::to_string(static_cast<long long>(per_rank) * L) + " " +
                      accelerator_kind_name(kind) + "s; " + std::to_string(D) + " available (" +
                      var + " list " + join_indices(v.visible) + ")");
  return per_rank;
}

// Gives rank r the devices r*per_rank .. r*per_rank+per_rank-1 of the visible list, and the
// NUMA node of the first.
void give_devices(DeviceAssignment& out, const Topology& topology, int L) {
  std::map<int, int> pu_numa;
  for (const auto& core : topology.cores())
    for (int pu : core.pus) pu_numa[pu] = core.numa;
  for (int r = 0; r < L && out.per_rank > 0; ++r) {
    const auto first = static_cast<std::size_t>(r) * out.per_rank;
    for (int k = 0; k < out.per_rank; ++k)
      out.rank_devices[r].push_back(out.visible[first + k].index);
    out.rank_numa[r] = device_numa(out.visible[first], pu_numa);
  }
}

// Each rank's visible-devices variable (and the vendor's order variable) when ferry sets it;
// returns whether ranks see only their own devices.
bool add_visible_env(DeviceAssignment& out, const BindingOptions& options, const Visibility& v,
                     const EnvLookup& user_env, int L) {
  const int D = static_cast<int>(v.visible.size());
  const AcceleratorKind kind = *out.kind;  // set: the host has devices of that kind
  const std::string var = visible_devices_variable(kind);
  if (options.isolate_devices && out.per_rank == 0 && options.devices_per_rank < 0 && D > 0) {
    out.warnings.push_back("--isolate-devices ignored: " + std::to_string(L) + " local ranks and " +
                           count_of(D, kind) + ", so no device per rank");
  }
  // Only say something when there is something to say: a device per rank or a --devices
  // restriction (left unset, the runtime shows every device anyway, in its own order).
  const bool isolate =
      options.isolate_devices && (out.per_rank > 0 || options.devices_per_rank == 0);
  if (!v.ferry_sets_var || (out.per_rank == 0 && options.devices.empty() && !isolate))
    return isolate;
  for (int r = 0; r < L; ++r) {
    const std::string list = isolate ? join_ints(out.rank_devices[r]) : join_indices(v.visible);
    out.rank_env[r].push_back(var + "=" + list);
    // CUDA numbers devices fastest-first by default; indices here are PCI bus order.
    if (kind == AcceleratorKind::kNvidiaGpu && !user_env("CUDA_DEVICE_ORDER"))
      out.rank_env[r].push_back("CUDA_DEVICE_ORDER=PCI_BUS_ID");
    // Level Zero otherwise lists discrete GPUs before integrated ones (recent releases) or
    // in /dev/dri/by-path directory order (older ones); indices here are PCI bus order.
    if (kind == AcceleratorKind::kIntelGpu && !user_env("ZE_ENABLE_PCI_ID_DEVICE_ORDER"))
      out.rank_env[r].push_back("ZE_ENABLE_PCI_ID_DEVICE_ORDER=1");
  }
  return isolate;
}

// Ascend scripts pick their NPU from DEVICE_ID (MindSpore, hand-written per-rank launch loops)
// or ASCEND_DEVICE_ID (CANN, TF adapter). Both are logical ids as the runtime counts them
// after ASCEND_RT_VISIBLE_DEVICES: CANN's environment-variable reference (envref_07_0028,
// "ASCEND_RT_VISIBLE_DEVICES") says =1 makes device 1 index 0, and that with both set
// ASCEND_DEVICE_ID may only be an index into the visible list. So a rank gets the position
// of its first device in the list it sees: 0 when isolated, its slot in the shared list
// otherwise; never the /dev/davinciN number.
void add_ascend_ids(DeviceAssignment& out, const Visibility& v, bool isolate,
                    const EnvLookup& user_env, int L) {
  const bool rank_sees_list = v.ferry_sets_var || v.user_value.has_value();
  if (out.per_rank == 0 || !rank_sees_list) return;
  const auto user_device_id = user_env("DEVICE_ID");
  const auto user_ascend_id = user_env("ASCEND_DEVICE_ID");
  if (user_device_id || user_ascend_id) {
    // One of them chosen by the user: setting the other could name a different NPU.
    out.notes.push_back(std::string(user_device_id ? "DEVICE_ID" : "ASCEND_DEVICE_ID") + "=" +
                        (user_device_id ? *user_device_id : *user_ascend_id) +
                        " set by the user: ferry sets neither DEVICE_ID nor ASCEND_DEVICE_ID");
    return;
  }
  for (int r = 0; r < L; ++r) {
    const std::string id = std::to_string(v.ferry_sets_var && isolate ? 0 : r * out.per_rank);
    out.rank_env[r].push_back("DEVICE_ID=" + id);
    out.rank_env[r].push_back("ASCEND_DEVICE_ID=" + id);
  }
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

  out.kind = choose_kind(accelerators, user_env);
  const std::vector<Accelerator> all = devices_of_kind(accelerators, out.kind, out.notes);
  if (all.empty()) {
    if (options.devices_per_rank > 0 || !options.devices.empty())
      return make_error(
          "no accelerators found on this host (no NVIDIA GPU in "
          "/proc/driver/nvidia/gpus, no /dev/davinciN, no AMD GPU under /dev/kfd, no Intel GPU "
          "with an i915/xe render node)");
    return out;
  }
  const AcceleratorKind kind = all.front().kind;
  auto listed = devices_option_list(all, options, visible_devices_variable(kind), out.notes);
  if (!listed) return listed.error();
  const Visibility v = apply_user_variables(std::move(*listed), all, options, user_env, out);
  out.visible = v.visible;
  auto per_rank = devices_per_rank(options, L, v, kind, out.notes);
  if (!per_rank) return per_rank.error();
  out.per_rank = *per_rank;
  give_devices(out, topology, L);
  const bool isolate = add_visible_env(out, options, v, user_env, L);
  if (kind == AcceleratorKind::kAscendNpu) add_ascend_ids(out, v, isolate, user_env, L);
  return out;
}

}  // namespace ferry
