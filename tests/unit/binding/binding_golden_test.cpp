// Characterization of plan_bindings() and assign_devices(): for a table of topologies,
// options, devices, quotas and user variables, everything they decide (policy line,
// warnings, notes, each rank's CPUs, threads, devices and variables) against a golden file
// in tests/data/binding/. A change there is a change users see: review the diff, then
// rewrite the files with FERRY_UPDATE_GOLDEN=1 build/bin/ferry_tests
// --gtest_filter='BindingGolden*'.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <sstream>

#include "ferry/binding/device_assignment.hpp"
#include "ferry/binding/id_list.hpp"
#include "ferry/binding/plan.hpp"

namespace ferry {
namespace {

// name, topology, ranks, options, GPU NUMA nodes (NVIDIA, one per entry; empty: none),
// CPU quota in CPUs (0: none), user environment
struct PolicyCase {
  const char* name;
  const char* topology;
  int ranks;
  BindingOptions opt;
  std::vector<int> gpu_numa;
  int quota_cpus;
  std::vector<std::string> env;
};

BindingOptions with(BindTo b, MapBy m = MapBy::kDefault, int pe = 0, int cpus = 0,
                    bool mem = false) {
  BindingOptions o;
  o.bind_to = b;
  o.map_by = m;
  o.pe = pe;
  o.cpus_per_rank = cpus;
  o.bind_mem = mem;
  return o;
}

const char* const k4Numa = "pack:2 numa:2 core:6 pu:2";  // 24 cores, 48 hwthreads
const char* const k1Numa = "core:8 pu:1";

const std::vector<PolicyCase> kPolicyCases = {
    {"default 4 ranks", k4Numa, 4, {}, {}, 0, {}},
    {"default 5 ranks: blocks cannot align", k4Numa, 5, {}, {}, 0, {}},
    {"default 3 ranks", k4Numa, 3, {}, {}, 0, {}},
    {"one NUMA node", k1Numa, 2, {}, {}, 0, {}},
    {"bind to none", k4Numa, 4, with(BindTo::kNone), {}, 0, {}},
    {"bind to none, bind-mem",
     k4Numa,
     2,
     with(BindTo::kNone, MapBy::kDefault, 0, 0, true),
     {},
     0,
     {}},
    {"oversubscribed", k1Numa, 9, {}, {}, 0, {}},
    {"oversubscribed with cpus per rank",
     k1Numa,
     9,
     with(BindTo::kDefault, MapBy::kDefault, 0, 2),
     {},
     0,
     {}},
    {"hwthreads", k4Numa, 4, with(BindTo::kHwthread), {}, 0, {}},
    {"hwthreads oversubscribed", k1Numa, 9, with(BindTo::kHwthread), {}, 0, {}},
    {"bind to numa, 4 ranks", k4Numa, 4, with(BindTo::kNuma), {}, 0, {}},
    {"bind to numa, 3 ranks", k4Numa, 3, with(BindTo::kNuma), {}, 0, {}},
    {"bind to numa, 6 ranks", k4Numa, 6, with(BindTo::kNuma), {}, 0, {}},
    {"bind to socket, 2 ranks", k4Numa, 2, with(BindTo::kSocket), {}, 0, {}},
    {"bind to socket, 3 ranks", k4Numa, 3, with(BindTo::kSocket), {}, 0, {}},
    {"map by numa", k4Numa, 4, with(BindTo::kDefault, MapBy::kNuma), {}, 0, {}},
    {"map by socket", k4Numa, 4, with(BindTo::kDefault, MapBy::kSocket), {}, 0, {}},
    {"map by slot", k4Numa, 4, with(BindTo::kDefault, MapBy::kSlot), {}, 0, {}},
    {"map by node", k4Numa, 4, with(BindTo::kDefault, MapBy::kNode), {}, 0, {}},
    {"map by numa, no room for round-robin",
     k4Numa,
     6,
     with(BindTo::kCore, MapBy::kNuma, 4),
     {},
     0,
     {}},
    {"map by numa, bind to numa", k4Numa, 6, with(BindTo::kNuma, MapBy::kNuma), {}, 0, {}},
    {"bind to numa, map by slot: linear blocks widened",
     k4Numa,
     3,
     with(BindTo::kNuma, MapBy::kSlot),
     {},
     0,
     {}},
    {"bind to socket, map by numa", k4Numa, 4, with(BindTo::kSocket, MapBy::kNuma), {}, 0, {}},
    {"cpus per rank 5", k4Numa, 4, with(BindTo::kDefault, MapBy::kDefault, 0, 5), {}, 0, {}},
    {"cpus per rank 7: too many",
     k4Numa,
     4,
     with(BindTo::kDefault, MapBy::kDefault, 0, 7),
     {},
     0,
     {}},
    {"PE and cpus per rank disagree",
     k4Numa,
     4,
     with(BindTo::kDefault, MapBy::kDefault, 2, 3),
     {},
     0,
     {}},
    {"negative PE", k4Numa, 4, with(BindTo::kDefault, MapBy::kDefault, -1), {}, 0, {}},
    {"PE 3 with hwthreads", k4Numa, 4, with(BindTo::kHwthread, MapBy::kDefault, 3), {}, 0, {}},
    {"bind-mem", k4Numa, 2, with(BindTo::kDefault, MapBy::kDefault, 0, 0, true), {}, 0, {}},
    {"GPUs on NUMA nodes 3,2,1,0", k4Numa, 4, {}, {3, 2, 1, 0}, 0, {}},
    {"GPUs of unknown locality", k4Numa, 4, {}, {-1, -1, -1, -1}, 0, {}},
    {"GPUs all on NUMA 0", k4Numa, 4, {}, {0, 0, 0, 0}, 0, {}},
    {"more ranks than GPUs", k4Numa, 4, {}, {0, 1}, 0, {}},
    {"quota 2 CPUs, 4 ranks", k4Numa, 4, {}, {}, 2, {}},
    {"quota 16 CPUs, 2 ranks", k4Numa, 2, {}, {}, 16, {}},
    {"quota 2 CPUs, unbound", k4Numa, 4, with(BindTo::kNone), {}, 2, {}},
    {"user set OMP_NUM_THREADS", k4Numa, 2, {}, {}, 0, {"OMP_NUM_THREADS=3"}},
    {"user set every thread variable",
     k4Numa,
     2,
     {},
     {},
     0,
     {"OMP_NUM_THREADS=3", "MKL_NUM_THREADS=3", "OPENBLAS_NUM_THREADS=3"}},
    {"uneven threads", k4Numa, 5, with(BindTo::kNuma), {}, 0, {}},
};

std::string summary_of(const PolicyCase& c) {
  auto t = Topology::load_synthetic(c.topology);
  if (!t) return "topology: " + t.error().message + "\n";
  std::vector<Accelerator> gpus;
  for (size_t i = 0; i < c.gpu_numa.size(); ++i) {
    Accelerator a;
    a.index = static_cast<int>(i);
    a.pci_address = "0000:0" + std::to_string(i) + ":00.0";
    a.numa_node = c.gpu_numa[i];
    gpus.push_back(a);
  }
  std::optional<CpuQuota> quota;
  if (c.quota_cpus > 0)
    quota = CpuQuota{c.quota_cpus * 100000LL, 100000, CgroupVersion::kV2, "/sys/fs/cgroup/cpu.max"};
  auto p = plan_bindings(*t, gpus, c.opt, c.ranks, env_lookup_from(c.env), quota);
  if (!p) return "error: " + p.error().message + "\n";
  std::string out = "policy: " + p->policy + "\n";
  for (const auto& w : p->warnings) out += "warning: " + w + "\n";
  for (const auto& n : p->notes) out += "note: " + n + "\n";
  for (const auto& r : p->ranks) {
    out += "rank " + std::to_string(r.local_rank) + ": " + (r.bound ? "cpus " : "unbound ") +
           r.cpu_list + " numa " + r.numa_list + " threads " + std::to_string(r.threads) +
           (r.strict ? " strict" : "") + (r.bind_mem ? " mem" : "") +
           (r.devices.empty() ? "" : " devices " + format_id_list(r.devices));
    for (const auto& e : r.env) out += " " + e;
    out += "\n";
  }
  return out;
}

// One host's devices: `count` of `kind` (NUMA node i % 2), and what the user asked for.
struct DeviceCase {
  const char* name;
  std::vector<Accelerator> devices;
  int ranks;
  BindingOptions opt;
  std::vector<std::string> env;
};

std::vector<Accelerator> devices(AcceleratorKind kind, int count, int tiles = 1) {
  std::vector<Accelerator> out;
  for (int i = 0; i < count; ++i) {
    Accelerator a;
    a.kind = kind;
    a.index = i;
    a.pci_address = "0000:1" + std::to_string(i) + ":00.0";
    a.numa_node = i % 2;
    a.tiles = tiles;
    out.push_back(a);
  }
  return out;
}

std::vector<Accelerator> plus(std::vector<Accelerator> a, const std::vector<Accelerator>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

BindingOptions devopt(int per_rank = -1, std::vector<int> list = {}, bool isolate = false) {
  BindingOptions o;
  o.devices_per_rank = per_rank;
  o.devices = std::move(list);
  o.isolate_devices = isolate;
  return o;
}

std::vector<Accelerator> intel_integrated_and_discrete() {
  auto d = devices(AcceleratorKind::kIntelGpu, 2);
  d[0].pci_address = "0000:00:02.0";
  d[0].integrated = true;
  return d;
}

using K = AcceleratorKind;
const std::vector<DeviceCase> kDeviceCases = {
    {"no devices", {}, 2, {}, {}},
    {"no devices, per rank asked", {}, 2, devopt(1), {}},
    {"no devices, list asked", {}, 2, devopt(-1, {0}), {}},
    {"no devices, user chose NVIDIA", {}, 2, {}, {"CUDA_VISIBLE_DEVICES=0"}},
    {"4 NVIDIA, 4 ranks", devices(K::kNvidiaGpu, 4), 4, {}, {}},
    {"4 NVIDIA, 2 ranks", devices(K::kNvidiaGpu, 4), 2, {}, {}},
    {"4 NVIDIA, 2 ranks, 2 each", devices(K::kNvidiaGpu, 4), 2, devopt(2), {}},
    {"4 NVIDIA, 3 ranks, 2 each: too many", devices(K::kNvidiaGpu, 4), 3, devopt(2), {}},
    {"2 NVIDIA, 4 ranks", devices(K::kNvidiaGpu, 2), 4, {}, {}},
    {"2 NVIDIA, 4 ranks, isolate", devices(K::kNvidiaGpu, 2), 4, devopt(-1, {}, true), {}},
    {"4 NVIDIA, isolate", devices(K::kNvidiaGpu, 4), 4, devopt(-1, {}, true), {}},
    {"4 NVIDIA, 0 per rank, isolate", devices(K::kNvidiaGpu, 4), 2, devopt(0, {}, true), {}},
    {"4 NVIDIA, --devices 3,1", devices(K::kNvidiaGpu, 4), 2, devopt(-1, {3, 1}), {}},
    {"4 NVIDIA, --devices 5", devices(K::kNvidiaGpu, 4), 2, devopt(-1, {5}), {}},
    {"4 NVIDIA, --devices 1,1", devices(K::kNvidiaGpu, 4), 2, devopt(-1, {1, 1}), {}},
    {"4 NVIDIA, user list", devices(K::kNvidiaGpu, 4), 2, {}, {"CUDA_VISIBLE_DEVICES=2,3"}},
    {"4 NVIDIA, user list and --devices",
     devices(K::kNvidiaGpu, 4),
     2,
     devopt(-1, {0, 1}),
     {"CUDA_VISIBLE_DEVICES=2,3"}},
    {"4 NVIDIA, user UUIDs", devices(K::kNvidiaGpu, 4), 2, {}, {"CUDA_VISIBLE_DEVICES=GPU-abc"}},
    {"4 NVIDIA, user UUIDs, per rank asked",
     devices(K::kNvidiaGpu, 4),
     2,
     devopt(1),
     {"CUDA_VISIBLE_DEVICES=GPU-abc"}},
    {"4 NVIDIA, user CUDA_DEVICE_ORDER",
     devices(K::kNvidiaGpu, 4),
     2,
     {},
     {"CUDA_DEVICE_ORDER=FASTEST_FIRST"}},
    {"4 Ascend, 4 ranks", devices(K::kAscendNpu, 4), 4, {}, {}},
    {"4 Ascend, isolate", devices(K::kAscendNpu, 4), 2, devopt(-1, {}, true), {}},
    {"4 Ascend, --devices 3,1", devices(K::kAscendNpu, 4), 2, devopt(-1, {3, 1}), {}},
    {"4 Ascend, user DEVICE_ID", devices(K::kAscendNpu, 4), 2, {}, {"DEVICE_ID=1"}},
    {"4 Ascend, user ASCEND_DEVICE_ID", devices(K::kAscendNpu, 4), 2, {}, {"ASCEND_DEVICE_ID=1"}},
    {"4 Ascend, user list", devices(K::kAscendNpu, 4), 2, {}, {"ASCEND_RT_VISIBLE_DEVICES=1,2"}},
    {"4 AMD", devices(K::kAmdGpu, 4), 4, {}, {}},
    {"4 AMD, user HIP_VISIBLE_DEVICES",
     devices(K::kAmdGpu, 4),
     2,
     devopt(-1, {0, 1}),
     {"HIP_VISIBLE_DEVICES=0"}},
    {"4 AMD, user HIP_VISIBLE_DEVICES, per rank",
     devices(K::kAmdGpu, 4),
     2,
     devopt(1),
     {"HIP_VISIBLE_DEVICES=0"}},
    {"2 Intel", devices(K::kIntelGpu, 2), 2, {}, {}},
    {"2 Intel, user ZE order",
     devices(K::kIntelGpu, 2),
     2,
     {},
     {"ZE_ENABLE_PCI_ID_DEVICE_ORDER=1"}},
    {"2 Intel, user ZE order 0",
     devices(K::kIntelGpu, 2),
     2,
     devopt(-1, {0, 1}),
     {"ZE_ENABLE_PCI_ID_DEVICE_ORDER=0"}},
    {"2 Intel multi-tile", devices(K::kIntelGpu, 2, 2), 2, devopt(-1, {0}), {}},
    {"2 Intel unknown tiles", devices(K::kIntelGpu, 2, 0), 2, {}, {}},
    {"Intel integrated and discrete", intel_integrated_and_discrete(), 2, {}, {}},
    {"2 Intel, selector with an index",
     devices(K::kIntelGpu, 2),
     2,
     {},
     {"ONEAPI_DEVICE_SELECTOR=level_zero:0"}},
    {"2 Intel, selector without an index",
     devices(K::kIntelGpu, 2),
     2,
     {},
     {"ONEAPI_DEVICE_SELECTOR=level_zero:gpu"}},
    {"NVIDIA and Ascend", plus(devices(K::kNvidiaGpu, 2), devices(K::kAscendNpu, 2)), 2, {}, {}},
    {"NVIDIA and Ascend, user chose Ascend",
     plus(devices(K::kNvidiaGpu, 2), devices(K::kAscendNpu, 2)),
     2,
     {},
     {"ASCEND_RT_VISIBLE_DEVICES=0,1"}},
    {"zero ranks", devices(K::kNvidiaGpu, 2), 0, {}, {}},
};

std::string device_summary_of(const DeviceCase& c) {
  auto t = Topology::load_synthetic("pack:2 numa:1 core:4 pu:1");
  if (!t) return "topology: " + t.error().message + "\n";
  auto d = assign_devices(*t, c.devices, c.opt, c.ranks, env_lookup_from(c.env));
  if (!d) return "error: " + d.error().message + "\n";
  std::string out =
      std::string("kind: ") + (d->kind ? accelerator_kind_name(*d->kind) : "none") + ", visible:";
  for (const auto& a : d->visible) out += " " + std::to_string(a.index);
  out += ", per rank " + std::to_string(d->per_rank) + "\n";
  for (const auto& w : d->warnings) out += "warning: " + w + "\n";
  for (const auto& n : d->notes) out += "note: " + n + "\n";
  for (size_t r = 0; r < d->rank_devices.size(); ++r) {
    out += "rank " + std::to_string(r) + ": devices " + format_id_list(d->rank_devices[r]) +
           " numa " + std::to_string(d->rank_numa[r]);
    for (const auto& e : d->rank_env[r]) out += " " + e;
    out += "\n";
  }
  return out;
}

// Compares `text` with the golden file `name`, or rewrites it when FERRY_UPDATE_GOLDEN is set.
void expect_golden(const std::string& name, const std::string& text) {
  const std::string path = std::string(FERRY_TEST_DATA) + "/binding/" + name;
  if (::getenv("FERRY_UPDATE_GOLDEN")) {
    std::ofstream(path, std::ios::binary) << text;
    GTEST_SKIP() << "rewrote " << path;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << path;
  std::stringstream golden;
  golden << in.rdbuf();
  // Case by case, so a failure names the case rather than dumping both files.
  auto cases = [](const std::string& all) {
    std::vector<std::string> out;
    std::istringstream lines(all);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.starts_with("=== ") || out.empty()) out.emplace_back();
      out.back() += line + "\n";
    }
    return out;
  };
  const auto want = cases(golden.str());
  const auto got = cases(text);
  ASSERT_EQ(got.size(), want.size()) << "cases in " << path;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], want[i]);
}

TEST(BindingGolden, PlanBindings) {
  std::string text;
  for (const auto& c : kPolicyCases) text += std::string("=== ") + c.name + "\n" + summary_of(c);
  expect_golden("plan_bindings.golden", text);
}

TEST(BindingGolden, AssignDevices) {
  std::string text;
  for (const auto& c : kDeviceCases)
    text += std::string("=== ") + c.name + "\n" + device_summary_of(c);
  expect_golden("assign_devices.golden", text);
}

}  // namespace
}  // namespace ferry
