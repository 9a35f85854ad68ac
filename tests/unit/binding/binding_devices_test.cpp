#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "binding_fake_root.hpp"
#include "ferry/binding/device_assignment.hpp"
#include "ferry/binding/id_list.hpp"
#include "ferry/binding/plan.hpp"
#include "ferry/binding/report.hpp"

namespace ferry {
namespace {

using namespace test_support;  // NOLINT: FakeRoot, x86(), discover(), has_env()

// 8 H100s: four behind each socket (bus order 18,2a,3a,5d | 9a,ab,ba,db), created out of order.
void eight_nvidia_gpus(FakeRoot& r, bool interleaved = false) {
  const char* bdfs[] = {"0000:9a:00.0", "0000:18:00.0", "0000:db:00.0", "0000:2a:00.0",
                        "0000:3a:00.0", "0000:ab:00.0", "0000:5d:00.0", "0000:ba:00.0"};
  for (const char* b : bdfs) {
    std::string bdf = b;
    static const std::vector<std::string> order = {"18", "2a", "3a", "5d", "9a", "ab", "ba", "db"};
    int index =
        static_cast<int>(std::find(order.begin(), order.end(), bdf.substr(5, 2)) - order.begin());
    int numa = interleaved ? index % 2 : index / 4;
    r.nvidia(bdf, numa, numa == 0 ? kNuma0 : kNuma1);
  }
}

Result<HostBindingPlan> plan_on(const Topology& t, const std::vector<Accelerator>& devs, int ranks,
                                BindingOptions o = {}, std::vector<std::string> env = {}) {
  return plan_bindings(t, devs, o, ranks, env_lookup_from(std::move(env)));
}

TEST(BindingDevices, FindsNvidiaGpusInPciOrderWithLocality) {
  FakeRoot r;
  eight_nvidia_gpus(r);
  auto d = discover(r);
  ASSERT_EQ(d.size(), 8u);
  EXPECT_EQ(d[0].pci_address, "0000:18:00.0");
  EXPECT_EQ(d[4].pci_address, "0000:9a:00.0");
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(d[i].index, i);
    EXPECT_EQ(d[i].kind, AcceleratorKind::kNvidiaGpu);
    EXPECT_EQ(d[i].numa_node, i / 4);
  }
  EXPECT_EQ(d[0].model, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(d[0].uuid, "GPU-18000000-0000-0000-0000-000000000000");
  EXPECT_EQ(format_id_list(d[7].local_cpus), kNuma1);
}

TEST(BindingDevices, EightRanksEightGpusCoresFromEachGpusNode) {
  FakeRoot r;
  eight_nvidia_gpus(r);
  auto p = plan_on(x86(), discover(r), 8);
  ASSERT_TRUE(p.ok()) << p.error().message;
  ASSERT_EQ(p->ranks.size(), 8u);
  EXPECT_EQ(p->devices_per_rank, 1);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(p->ranks[i].devices, std::vector<int>{i});
    EXPECT_EQ(p->ranks[i].numa_list, std::to_string(i / 4));
    EXPECT_TRUE(has_env(p->ranks[i], "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7"));
    EXPECT_TRUE(has_env(p->ranks[i], "CUDA_DEVICE_ORDER=PCI_BUS_ID"));
    EXPECT_TRUE(has_env(p->ranks[i], "OMP_NUM_THREADS=6"));
  }
  EXPECT_EQ(p->ranks[0].cpu_list, "0-5,48-53");
  EXPECT_EQ(p->ranks[4].cpu_list, "24-29,72-77");
  EXPECT_EQ(format_binding_report("gpu1", 12, p->ranks[4], *p),
            "gpu1 rank 12 local_rank 4: cpus 24-29,72-77 (6 cores) NUMA 1, NVIDIA GPU 4 "
            "[0000:9a:00.0 NUMA 1], CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7");
}

TEST(BindingDevices, InterleavedGpusPullEachRankToItsGpusSocket) {
  FakeRoot r;
  eight_nvidia_gpus(r, /*interleaved=*/true);
  auto p = plan_on(x86(), discover(r), 8);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->ranks[0].cpu_list, "0-5,48-53");
  EXPECT_EQ(p->ranks[1].cpu_list, "24-29,72-77");
  EXPECT_EQ(p->ranks[2].cpu_list, "6-11,54-59");
  EXPECT_EQ(p->ranks[7].cpu_list, "42-47,90-95");
  EXPECT_NE(p->policy.find("devices'"), std::string::npos) << p->policy;
}

TEST(BindingDevices, IsolateShowsEachRankOnlyItsOwnDevices) {
  FakeRoot r;
  eight_nvidia_gpus(r);
  BindingOptions o;
  o.isolate_devices = true;
  o.devices_per_rank = 2;
  auto p = plan_on(x86(), discover(r), 4, o);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->ranks[3].devices, (std::vector<int>{6, 7}));
  EXPECT_TRUE(has_env(p->ranks[3], "CUDA_VISIBLE_DEVICES=6,7"));
  EXPECT_TRUE(has_env(p->ranks[0], "CUDA_VISIBLE_DEVICES=0,1"));
}

TEST(BindingDevices, FewerRanksThanGpusStayNextToTheirGpus) {
  FakeRoot r;
  eight_nvidia_gpus(r);
  auto p = plan_on(x86(), discover(r), 4);  // GPUs 0-3, all behind socket 0
  ASSERT_TRUE(p.ok());
  for (const auto& rb : p->ranks) EXPECT_EQ(rb.numa_list, "0");
  EXPECT_EQ(p->ranks[3].cpu_list, "18-23,66-71");  // 6 cores each, not 12
  EXPECT_TRUE(mentions(p->notes, "4 ranks share NUMA/package 0"));
}

TEST(BindingDevices, MoreRanksThanGpusAssignNoneAndLeaveTheVariableAlone) {
  FakeRoot r;
  eight_nvidia_gpus(r);
  auto p = plan_on(x86(), discover(r), 16);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->devices_per_rank, 0);
  EXPECT_TRUE(p->ranks[0].devices.empty());
  EXPECT_FALSE(has_var(p->ranks[0], "CUDA_VISIBLE_DEVICES"));
  EXPECT_TRUE(mentions(p->notes, "16 local ranks share 8 NVIDIA GPUs"));
  EXPECT_EQ(p->ranks[15].cpu_list, "45-47,93-95");
}

TEST(BindingDevices, DevicesOptionRestrictsTheHostList) {
  FakeRoot r;
  eight_nvidia_gpus(r);
  BindingOptions o;
  o.devices = {4, 5};
  auto p = plan_on(x86(), discover(r), 2, o);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->ranks[0].devices, std::vector<int>{4});
  EXPECT_TRUE(has_env(p->ranks[1], "CUDA_VISIBLE_DEVICES=4,5"));
  EXPECT_EQ(p->ranks[0].cpu_list, "24-35,72-83");
  EXPECT_EQ(p->ranks[1].cpu_list, "36-47,84-95");
}

TEST(BindingDevices, ImpossibleDeviceRequestsAreErrors) {
  FakeRoot r;
  eight_nvidia_gpus(r);
  auto devs = discover(r);
  BindingOptions bad_index;
  bad_index.devices = {9};
  auto e1 = plan_on(x86(), devs, 1, bad_index);
  ASSERT_FALSE(e1.ok());
  EXPECT_EQ(e1.error().message, "--devices 9: this host has 8 NVIDIA GPUs (0-7)");
  BindingOptions two_each;
  two_each.devices_per_rank = 2;
  auto e2 = plan_on(x86(), devs, 8, two_each);
  ASSERT_FALSE(e2.ok());
  EXPECT_NE(e2.error().message.find("needs 16 NVIDIA GPUs; 8 available"), std::string::npos)
      << e2.error().message;
  FakeRoot empty;
  BindingOptions one;
  one.devices_per_rank = 1;
  auto e3 = plan_on(x86(), discover(empty), 2, one);
  ASSERT_FALSE(e3.ok());
  EXPECT_NE(e3.error().message.find("no accelerators found"), std::string::npos);
}

TEST(BindingDevices, UserVisibleDevicesWinAndStillGiveLocality) {
  FakeRoot r;
  eight_nvidia_gpus(r);
  auto p = plan_on(x86(), discover(r), 2, {}, {"CUDA_VISIBLE_DEVICES=5,6"});
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(has_var(p->ranks[0], "CUDA_VISIBLE_DEVICES"));
  EXPECT_FALSE(has_var(p->ranks[0], "CUDA_DEVICE_ORDER"));
  EXPECT_EQ(p->ranks[0].devices, std::vector<int>{5});
  EXPECT_EQ(p->ranks[0].numa_list, "1");
  auto uuids = plan_on(x86(), discover(r), 2, {}, {"CUDA_VISIBLE_DEVICES=GPU-18000000"});
  ASSERT_TRUE(uuids.ok());
  EXPECT_TRUE(uuids->ranks[0].devices.empty());
  EXPECT_EQ(uuids->ranks[1].cpu_list, "24-47,72-95");
  EXPECT_TRUE(mentions(uuids->notes, "not a list of indices"));
}

TEST(BindingDevices, UnknownNumaNodeFallsBackToLocalCpulistThenToDefault) {
  FakeRoot r;
  r.nvidia("0000:18:00.0", -1, kNuma1);  // numa_node -1, but local_cpulist names socket 1
  r.nvidia("0000:3b:00.0", -1, "0-95");  // nothing known
  auto d = discover(r);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].numa_node, -1);
  auto only_first = plan_on(x86(), {d[0]}, 1);
  ASSERT_TRUE(only_first.ok());
  EXPECT_EQ(only_first->ranks[0].numa_list, "1");
  auto both = plan_on(x86(), d, 2);
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->ranks[0].cpu_list, "0-23,48-71");
  EXPECT_TRUE(mentions(both->notes, "device NUMA locality unknown"));
}

// Atlas-style: 8 Ascend 910 on a 4-node ARM host, NPUs 0-3 on node 0, 4-7 on node 2; the
// SoC also carries a Huawei NIC that must not count.
void eight_ascend_npus(FakeRoot& r) {
  r.file("dev/davinci_manager", "");
  r.file("dev/devmm_svm", "");
  const char* bdfs[] = {"0000:c1:00.0", "0000:c2:00.0", "0000:81:00.0", "0000:82:00.0",
                        "0000:41:00.0", "0000:42:00.0", "0000:01:00.0", "0000:02:00.0"};
  std::vector<std::string> sorted(std::begin(bdfs), std::end(bdfs));
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 8; ++i) {
    r.file("dev/davinci" + std::to_string(i), "");
    const int numa = i < 4 ? 0 : 2;
    r.pci(sorted[i], numa, numa == 0 ? "0-23" : "48-71", "0x19e5", "0xd801", "0x120000");
  }
  r.pci("0000:7d:00.0", 0, "0-23", "0x19e5", "0xa222", "0x020000");
}

TEST(BindingDevices, AscendNpusByDavinciNodeWithInferredPciAddresses) {
  FakeRoot r;
  eight_ascend_npus(r);
  auto d = discover(r);
  ASSERT_EQ(d.size(), 8u);
  EXPECT_EQ(d[0].kind, AcceleratorKind::kAscendNpu);
  EXPECT_EQ(d[0].pci_address, "0000:01:00.0");
  EXPECT_TRUE(d[0].pci_address_inferred);
  EXPECT_EQ(d[5].numa_node, 2);
  auto arm = Topology::load_synthetic("numa:4 core:24 pu:1");
  ASSERT_TRUE(arm.ok());
  auto p = plan_on(*arm, d, 8);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(has_env(p->ranks[6], "ASCEND_RT_VISIBLE_DEVICES=0,1,2,3,4,5,6,7"));
  EXPECT_FALSE(has_var(p->ranks[6], "CUDA_DEVICE_ORDER"));
  EXPECT_EQ(p->ranks[1].cpu_list, "6-11");
  EXPECT_EQ(p->ranks[4].cpu_list, "48-53");
}

TEST(BindingDevices, AscendContainerSeesTwoNpusAsZeroAndOne) {
  FakeRoot r;
  eight_ascend_npus(r);
  for (int i : {0, 1, 2, 4, 6, 7})
    fs::remove(fs::path(r.path()) / ("dev/davinci" + std::to_string(i)));
  auto d = discover(r);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].index, 0);
  EXPECT_EQ(d[1].index, 1);
  EXPECT_EQ(d[0].model, "/dev/davinci3");
  EXPECT_EQ(d[0].pci_address, "0000:42:00.0");
  EXPECT_EQ(d[1].pci_address, "0000:82:00.0");
  EXPECT_EQ(d[1].numa_node, 2);
}

TEST(BindingDevices, AscendPciAddressFromTheDriversLinkWhenPresent) {
  FakeRoot r;
  r.file("dev/davinci0", "");
  r.pci("0000:3d:00.0", 1, "", "0x19e5", "0xd802", "0x120000");
  r.symlink("sys/class/devdrv-class/davinci0/device", "../../../devices/pci0000:3a/0000:3d:00.0");
  auto d = discover(r);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].pci_address, "0000:3d:00.0");
  EXPECT_FALSE(d[0].pci_address_inferred);
  EXPECT_EQ(d[0].numa_node, 1);
}

TEST(BindingDevices, AmdGpusFromKfdTopology) {
  FakeRoot r;
  r.file("dev/kfd", "");
  const std::string nodes = "sys/class/kfd/kfd/topology/nodes/";
  r.file(nodes + "0/properties", "cpu_cores_count 48\nsimd_count 0\nlocation_id 0\n");
  r.file(nodes + "1/properties",
         "cpu_cores_count 0\nsimd_count 416\nlocation_id 49408\ndomain 0\ndrm_render_minor 128\n"
         "unique_id 1234567890\n");
  r.file(nodes + "2/properties",
         "cpu_cores_count 0\nsimd_count 416\nlocation_id 8448\ndomain 0\ndrm_render_minor 129\n");
  r.pci("0000:c1:00.0", 1, kNuma1, "0x1002", "0x740f", "0x038000");
  r.pci("0000:21:00.0", 0, kNuma0, "0x1002", "0x740f", "0x038000");
  auto d = discover(r);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].pci_address, "0000:c1:00.0");
  EXPECT_EQ(d[0].numa_node, 1);
  EXPECT_EQ(d[0].uuid, "GPU-00000000499602d2");
  EXPECT_EQ(d[1].pci_address, "0000:21:00.0");
  auto p = plan_on(x86(), d, 2);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(has_env(p->ranks[0], "ROCR_VISIBLE_DEVICES=0,1"));
  EXPECT_EQ(p->ranks[0].numa_list, "1");  // GPU 0 sits behind socket 1
  EXPECT_EQ(p->ranks[1].numa_list, "0");
  // A container that only has renderD128 sees one GPU.
  r.file("dev/dri/renderD128", "");
  EXPECT_EQ(discover(r).size(), 1u);
}

TEST(BindingDevices, HostWithoutDevicesAndBadRoot) {
  FakeRoot r;
  EXPECT_TRUE(discover(r).empty());
  auto p = plan_on(x86(), {}, 2);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(has_var(p->ranks[0], "CUDA_VISIBLE_DEVICES"));
  EXPECT_EQ(p->devices_per_rank, 0);
  auto bad = discover_accelerators(r.path() + "/missing");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("not a directory"), std::string::npos);
}

TEST(BindingDevices, NvidiaSmiQueryAndPciAddresses) {
  auto d = parse_nvidia_smi_query(
      "0, 00000000:18:00.0, GPU-aaaa, NVIDIA H100 80GB HBM3\n"
      "1, 00000000:2A:00.0, GPU-bbbb, NVIDIA H100 80GB HBM3\n"
      "garbage line\n");
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[1].index, 1);
  EXPECT_EQ(d[1].pci_address, "0000:2a:00.0");
  EXPECT_EQ(d[1].uuid, "GPU-bbbb");
  EXPECT_EQ(d[0].model, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(normalize_pci_address("3b:00.0"), "0000:3b:00.0");
  EXPECT_EQ(normalize_pci_address("0000:3b:00.9"), "");
  EXPECT_EQ(normalize_pci_address("davinci0"), "");
}

}  // namespace
}  // namespace ferry
