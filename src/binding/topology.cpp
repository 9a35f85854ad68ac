#include "ferry/binding/topology.hpp"

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <set>

#include "ferry/common/read_text_file.hpp"

namespace ferry {

namespace {

std::string errno_text() { return std::strerror(errno); }

// What a preloaded topology depends on: the CPUs this process may run on and the CPUs
// online. A cgroup cpuset's change sets the affinity of the tasks in it, so it shows here too.
std::string cpu_state() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  std::string key;
  if (sched_getaffinity(0, sizeof mask, &mask) == 0)
    key.assign(reinterpret_cast<const char*>(&mask), sizeof mask);
  if (auto online = read_text_file("/sys/devices/system/cpu/online", 4096, "CPU list"))
    key += "|" + *online;
  return key;
}

struct Preloaded {
  std::optional<Topology> topology;
  std::string cpu_state;
};

Preloaded& preloaded() {
  static Preloaded p;
  return p;
}

}  // namespace

void Topology::preload_system() {
  Preloaded& p = preloaded();
  p.topology.reset();
  p.cpu_state = cpu_state();
  if (auto t = load_system()) p.topology.emplace(std::move(*t));
}

bool Topology::has_preloaded() { return preloaded().topology.has_value(); }

Result<HwlocTopologyPtr> Topology::init() {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) return make_error("hwloc: init failed: " + errno_text());
  return HwlocTopologyPtr(raw);
}

Result<Topology> Topology::finish_load(HwlocTopologyPtr topo, const std::string& what) {
  if (hwloc_topology_load(topo.get()) != 0)
    return make_error("hwloc: cannot load topology from " + what + ": " + errno_text());
  Topology t(std::move(topo));
  if (auto s = t.refresh(); !s) return s.error();
  return t;
}

Result<Topology> Topology::load_system() {
  if (Preloaded& p = preloaded(); p.topology) {
    std::optional<Topology> kept = std::move(p.topology);
    p.topology.reset();
    if (p.cpu_state == cpu_state()) return std::move(*kept);
  }
  auto topo = init();
  if (!topo) return topo.error();
  // Disallowed CPUs (cgroup cpuset) are dropped by default; this also drops the ones outside
  // the process's affinity mask (taskset, Slurm, a parent's binding).
  hwloc_topology_set_flags(topo->get(), HWLOC_TOPOLOGY_FLAG_RESTRICT_TO_CPUBINDING);
#if HWLOC_API_VERSION >= 0x00020100
  // Linux's sysfs gives every object binding uses (packages, NUMA nodes, caches, cores, PUs);
  // hwloc's x86 backend only adds CPUID details to them, and CPUID traps to the hypervisor in
  // a virtual machine: half of the topology's load time there, paid by every ferryd.
  hwloc_topology_set_components(topo->get(), HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "x86");
#endif
  auto t = finish_load(std::move(*topo), "this system");
  if (!t) return t;
  // Belt and braces for kernels/hwloc builds that ignore the flag: intersect with our mask.
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof mask, &mask) == 0) {
    std::vector<int> allowed;
    for (int pu : t->pus())
      if (pu < CPU_SETSIZE && CPU_ISSET(pu, &mask)) allowed.push_back(pu);
    if (!allowed.empty() && allowed.size() != t->pus().size()) {
      if (auto s = t->restrict_to(allowed); !s) return s.error();
    }
  }
  return t;
}

Result<Topology> Topology::load_synthetic(const std::string& description) {
  auto topo = init();
  if (!topo) return topo.error();
  if (hwloc_topology_set_synthetic(topo->get(), description.c_str()) != 0)
    return make_error("hwloc: invalid synthetic topology '" + description + "'");
  return finish_load(std::move(*topo), "'" + description + "'");
}

Result<Topology> Topology::load_xml(const std::string& path) {
  auto topo = init();
  if (!topo) return topo.error();
  if (hwloc_topology_set_xml(topo->get(), path.c_str()) != 0)
    return make_error("hwloc: cannot read topology XML " + path + ": " + errno_text());
  return finish_load(std::move(*topo), path);
}

Status Topology::restrict_to(const std::vector<int>& pus) {
  HwlocBitmapPtr set = new_hwloc_bitmap();
  if (!set) return make_error("hwloc: out of memory");
  for (int pu : pus)
    if (pu >= 0) hwloc_bitmap_set(set.get(), static_cast<unsigned>(pu));
  if (!hwloc_bitmap_intersects(set.get(), hwloc_topology_get_topology_cpuset(topo_.get())))
    return make_error("cannot restrict the topology to cpus that it does not have");
  if (hwloc_topology_restrict(topo_.get(), set.get(), HWLOC_RESTRICT_FLAG_REMOVE_CPULESS) != 0)
    // hwloc documents the topology as unusable after a failed restrict (ENOMEM only).
    return make_error("hwloc: restricting the topology failed: " + errno_text());
  return refresh();
}

Status Topology::refresh() {
  cores_.clear();
  hwloc_topology_t topo = topo_.get();
  const hwloc_const_cpuset_t allowed = hwloc_topology_get_allowed_cpuset(topo);
  const int numa_count = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  hwloc_obj_type_t unit = HWLOC_OBJ_CORE;
  if (hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE) <= 0) unit = HWLOC_OBJ_PU;
  HwlocBitmapPtr pus = new_hwloc_bitmap();
  if (!pus) return make_error("hwloc: out of memory");
  for (hwloc_obj_t obj = hwloc_get_next_obj_by_type(topo, unit, nullptr); obj;
       obj = hwloc_get_next_obj_by_type(topo, unit, obj)) {
    if (!obj->cpuset) continue;
    hwloc_bitmap_and(pus.get(), obj->cpuset, allowed);
    if (hwloc_bitmap_iszero(pus.get())) continue;
    CoreInfo core;
    for (int i = hwloc_bitmap_first(pus.get()); i >= 0; i = hwloc_bitmap_next(pus.get(), i))
      core.pus.push_back(i);
    // NUMA nodes hang off the tree as memory children; match them by cpuset. When several
    // share the cpuset (DRAM + HBM/CXL), the first (lowest index) is the DRAM one.
    for (int n = 0; n < numa_count; ++n) {
      hwloc_obj_t node = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, n);
      if (node && node->cpuset && hwloc_bitmap_intersects(node->cpuset, pus.get())) {
        core.numa = static_cast<int>(node->os_index);
        break;
      }
    }
    if (hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, obj))
      core.package = static_cast<int>(pkg->logical_index);
    cores_.push_back(std::move(core));
  }
  if (cores_.empty()) return make_error("hwloc: the topology has no allowed CPU");
  return {};
}

std::vector<int> Topology::numa_nodes() const {
  std::set<int> s;
  for (const auto& c : cores_) s.insert(c.numa);
  return {s.begin(), s.end()};
}

int Topology::package_count() const {
  std::set<int> s;
  for (const auto& c : cores_) s.insert(c.package);
  return static_cast<int>(s.size());
}

std::vector<int> Topology::pus() const {
  std::vector<int> out;
  for (const auto& c : cores_) out.insert(out.end(), c.pus.begin(), c.pus.end());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace ferry
