// What each accelerator kind's ranks are told: Ascend DEVICE_ID/ASCEND_DEVICE_ID, AMD's
// ROCR_VISIBLE_DEVICES (and when ferry must stay silent), Intel GPUs and ZE_AFFINITY_MASK.
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
#include "ferry/binding/summary.hpp"

namespace ferry {
namespace {

using namespace test_support;  // NOLINT: FakeRoot, x86(), discover(), has_env()

namespace fs = std::filesystem;

const std::string kIntelFlexRoot = std::string(FERRY_TEST_DATA) + "/binding/intel-flex-2gpu";

Result<HostBindingPlan> plan_on(const std::vector<Accelerator>& devs, int ranks,
                                BindingOptions o = {}, std::vector<std::string> env = {}) {
  return plan_bindings(x86(), devs, o, ranks, env_lookup_from(std::move(env)));
}

// ---- Ascend -------------------------------------------------------------------------------

TEST(AcceleratorEnv, AscendSharedListDeviceIdIsTheRanksSlotInIt) {
  FakeRoot r;
  r.ascend_npus();
  auto p = plan_on(discover(r.path()), 8);
  ASSERT_TRUE(p.ok()) << p.error().message;
  ASSERT_TRUE(p->device_kind.has_value());
  EXPECT_EQ(*p->device_kind, AcceleratorKind::kAscendNpu);
  for (int i = 0; i < 8; ++i) {
    EXPECT_TRUE(has_env(p->ranks[i], "ASCEND_RT_VISIBLE_DEVICES=0,1,2,3,4,5,6,7"));
    EXPECT_TRUE(has_env(p->ranks[i], "DEVICE_ID=" + std::to_string(i)));
    EXPECT_TRUE(has_env(p->ranks[i], "ASCEND_DEVICE_ID=" + std::to_string(i)));
  }
  EXPECT_EQ(format_binding_report("npu1", 14, p->ranks[6], *p),
            "npu1 rank 14 local_rank 6: cpus 36-41,84-89 (6 cores) NUMA 1, Ascend NPU 6 "
            "[0000:70:00.0 NUMA 1], ASCEND_RT_VISIBLE_DEVICES=0,1,2,3,4,5,6,7, DEVICE_ID=6");
}

TEST(AcceleratorEnv, AscendIsolatedRankFindsItsNpuAtLogicalIdZero) {
  FakeRoot r;
  r.ascend_npus();
  BindingOptions o;
  o.isolate_devices = true;
  auto p = plan_on(discover(r.path()), 8, o);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_TRUE(has_env(p->ranks[6], "ASCEND_RT_VISIBLE_DEVICES=6"));
  // CANN: with ASCEND_RT_VISIBLE_DEVICES=6 the runtime calls that NPU 0; DEVICE_ID=6 fails.
  EXPECT_TRUE(has_env(p->ranks[6], "DEVICE_ID=0"));
  EXPECT_TRUE(has_env(p->ranks[6], "ASCEND_DEVICE_ID=0"));
  EXPECT_FALSE(has_env(p->ranks[6], "DEVICE_ID=6"));

  o.devices_per_rank = 2;
  auto two = plan_on(discover(r.path()), 4, o);
  ASSERT_TRUE(two.ok()) << two.error().message;
  EXPECT_TRUE(has_env(two->ranks[3], "ASCEND_RT_VISIBLE_DEVICES=6,7"));
  EXPECT_TRUE(has_env(two->ranks[3], "DEVICE_ID=0"));
  o.isolate_devices = false;
  auto shared = plan_on(discover(r.path()), 4, o);
  ASSERT_TRUE(shared.ok());
  EXPECT_TRUE(has_env(shared->ranks[3], "DEVICE_ID=6"));  // its first NPU in the shared list
}

TEST(AcceleratorEnv, AscendContainerNumbersItsNodesFromZero) {
  FakeRoot r;
  r.ascend_npus();
  for (int i : {0, 1, 2, 4, 6, 7}) r.remove("dev/davinci" + std::to_string(i));
  BindingOptions o;
  o.isolate_devices = true;
  auto p = plan_on(discover(r.path()), 2, o);  // /dev/davinci3 and /dev/davinci5
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_TRUE(has_env(p->ranks[1], "ASCEND_RT_VISIBLE_DEVICES=1"));
  EXPECT_TRUE(has_env(p->ranks[1], "DEVICE_ID=0"));
  EXPECT_EQ(p->ranks[1].numa_list, "1");
}

TEST(AcceleratorEnv, AscendDevicesListIsPutInAscendingOrder) {
  FakeRoot r;
  r.ascend_npus();
  BindingOptions o;
  o.devices = {5, 3};
  auto p = plan_on(discover(r.path()), 2, o);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_TRUE(has_env(p->ranks[0], "ASCEND_RT_VISIBLE_DEVICES=3,5"));
  EXPECT_EQ(p->ranks[0].devices, std::vector<int>{3});
  EXPECT_TRUE(has_env(p->ranks[0], "DEVICE_ID=0"));
  EXPECT_TRUE(has_env(p->ranks[1], "DEVICE_ID=1"));
  EXPECT_TRUE(mentions(p->notes, "ascending order"));
}

TEST(AcceleratorEnv, AscendUserListKeptAndDeviceIdIndexesIt) {
  FakeRoot r;
  r.ascend_npus();
  auto p = plan_on(discover(r.path()), 2, {}, {"ASCEND_RT_VISIBLE_DEVICES=4,5"});
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_FALSE(has_var(p->ranks[0], "ASCEND_RT_VISIBLE_DEVICES"));
  EXPECT_EQ(p->ranks[1].devices, std::vector<int>{5});
  EXPECT_TRUE(has_env(p->ranks[0], "DEVICE_ID=0"));
  EXPECT_TRUE(has_env(p->ranks[1], "DEVICE_ID=1"));
}

TEST(AcceleratorEnv, AscendUserDeviceIdSuppressesBoth) {
  FakeRoot r;
  r.ascend_npus();
  for (const char* user : {"DEVICE_ID=3", "ASCEND_DEVICE_ID=3"}) {
    auto p = plan_on(discover(r.path()), 2, {}, {user});
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_FALSE(has_var(p->ranks[1], "DEVICE_ID")) << user;
    EXPECT_FALSE(has_var(p->ranks[1], "ASCEND_DEVICE_ID")) << user;
    EXPECT_TRUE(has_var(p->ranks[1], "ASCEND_RT_VISIBLE_DEVICES")) << user;
    EXPECT_TRUE(mentions(p->notes, "ferry sets neither DEVICE_ID nor ASCEND_DEVICE_ID")) << user;
  }
}

TEST(AcceleratorEnv, NoDeviceIdWithoutADevicePerRankOrOnOtherKinds) {
  FakeRoot r;
  r.ascend_npus(2);
  auto crowded = plan_on(discover(r.path()), 4);  // 4 ranks share 2 NPUs
  ASSERT_TRUE(crowded.ok());
  EXPECT_FALSE(has_var(crowded->ranks[0], "DEVICE_ID"));
  EXPECT_FALSE(has_var(crowded->ranks[0], "ASCEND_DEVICE_ID"));
  FakeRoot n;
  n.nvidia_gpu("0000:18:00.0", 0);
  n.nvidia_gpu("0000:9a:00.0", 1);
  auto nv = plan_on(discover(n.path()), 2);
  ASSERT_TRUE(nv.ok());
  EXPECT_TRUE(has_var(nv->ranks[1], "CUDA_VISIBLE_DEVICES"));
  EXPECT_FALSE(has_var(nv->ranks[1], "DEVICE_ID"));
}

TEST(AcceleratorEnv, UserVariableChoosesTheKindOnAMixedHost) {
  FakeRoot r;
  r.ascend_npus(2);
  r.nvidia_gpu("0000:b0:00.0", 1);
  r.nvidia_gpu("0000:b1:00.0", 1);
  auto by_default = plan_on(discover(r.path()), 2);
  ASSERT_TRUE(by_default.ok());
  EXPECT_EQ(*by_default->device_kind, AcceleratorKind::kNvidiaGpu);
  auto chosen = plan_on(discover(r.path()), 2, {}, {"ASCEND_RT_VISIBLE_DEVICES=0,1"});
  ASSERT_TRUE(chosen.ok());
  EXPECT_EQ(*chosen->device_kind, AcceleratorKind::kAscendNpu);
  EXPECT_TRUE(has_env(chosen->ranks[1], "DEVICE_ID=1"));
  EXPECT_FALSE(has_var(chosen->ranks[1], "CUDA_VISIBLE_DEVICES"));
  EXPECT_TRUE(mentions(chosen->notes, "also found 2 NVIDIA GPUs"));
  // No NPU found, but the user's variable says the ranks are Ascend ranks.
  auto none = plan_on({}, 2, {}, {"ASCEND_RT_VISIBLE_DEVICES=0"});
  ASSERT_TRUE(none.ok());
  ASSERT_TRUE(none->device_kind.has_value());
  EXPECT_EQ(*none->device_kind, AcceleratorKind::kAscendNpu);
  auto nothing = plan_on({}, 2);
  ASSERT_TRUE(nothing.ok());
  EXPECT_FALSE(nothing->device_kind.has_value());
}

// ---- AMD ----------------------------------------------------------------------------------

TEST(AcceleratorEnv, AmdSetsRocrVisibleDevicesOnly) {
  FakeRoot r;
  r.amd_gpus();
  BindingOptions o;
  o.isolate_devices = true;
  auto p = plan_on(discover(r.path()), 2, o);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_TRUE(has_env(p->ranks[0], "ROCR_VISIBLE_DEVICES=0"));
  EXPECT_TRUE(has_env(p->ranks[1], "ROCR_VISIBLE_DEVICES=1"));
  for (const auto& rb : p->ranks) {
    EXPECT_FALSE(has_var(rb, "HIP_VISIBLE_DEVICES"));
    EXPECT_FALSE(has_var(rb, "CUDA_VISIBLE_DEVICES"));
    EXPECT_FALSE(has_var(rb, "DEVICE_ID"));
  }
  EXPECT_EQ(p->ranks[0].numa_list, "1");
  EXPECT_NE(format_binding_report("mi1", 1, p->ranks[1], *p).find(", ROCR_VISIBLE_DEVICES=1"),
            std::string::npos);
}

TEST(AcceleratorEnv, AmdUserHipSelectionIsNotRenumberedTwice) {
  FakeRoot r;
  r.amd_gpus();
  // HIP (and CUDA_VISIBLE_DEVICES, which HIP reads too) index what ROCr left visible.
  for (const char* user :
       {"HIP_VISIBLE_DEVICES=1", "CUDA_VISIBLE_DEVICES=1", "GPU_DEVICE_ORDINAL=1"}) {
    BindingOptions o;
    o.isolate_devices = true;
    auto p = plan_on(discover(r.path()), 2, o, {user});
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_FALSE(has_var(p->ranks[1], "ROCR_VISIBLE_DEVICES")) << user;
    EXPECT_TRUE(p->ranks[1].devices.empty()) << user;
    EXPECT_TRUE(mentions(p->notes, "renumber the devices twice")) << user;
    o.devices_per_rank = 1;
    auto e = plan_on(discover(r.path()), 2, o, {user});
    ASSERT_FALSE(e.ok()) << user;
    EXPECT_NE(e.error().message.find(std::string(user).substr(0, std::string(user).find('='))),
              std::string::npos)
        << e.error().message;
  }
  // The user's own ROCR_VISIBLE_DEVICES list is still a host list ferry can place ranks by.
  auto rocr = plan_on(discover(r.path()), 1, {}, {"ROCR_VISIBLE_DEVICES=1"});
  ASSERT_TRUE(rocr.ok());
  EXPECT_EQ(rocr->ranks[0].devices, std::vector<int>{1});
  EXPECT_EQ(rocr->ranks[0].numa_list, "0");
}

// ---- Intel --------------------------------------------------------------------------------

TEST(AcceleratorEnv, IntelGpusFromTheSysfsTreeInPciOrder) {
  auto d = discover(kIntelFlexRoot);
  ASSERT_EQ(d.size(), 2u);  // the BMC's ASPEED display is no accelerator
  EXPECT_EQ(d[0].kind, AcceleratorKind::kIntelGpu);
  EXPECT_EQ(d[0].index, 0);
  EXPECT_EQ(d[0].pci_address, "0000:4d:00.0");  // card2, but first on the bus
  EXPECT_EQ(d[0].model, "/dev/dri/renderD129");
  EXPECT_EQ(d[0].numa_node, 0);
  EXPECT_EQ(d[0].tiles, 1);
  EXPECT_FALSE(d[0].integrated);
  EXPECT_EQ(d[1].pci_address, "0000:ca:00.0");
  EXPECT_EQ(d[1].numa_node, 1);
  EXPECT_EQ(format_id_list(d[1].local_cpus), kNuma1);
  EXPECT_EQ(summarize(x86(), d).to_string(),
            "2 packages, 2 NUMA nodes, 48 cores, 96 hwthreads (cpus 0-95), 2 Intel GPUs");
}

TEST(AcceleratorEnv, IntelRanksGetZeAffinityMaskInPciOrder) {
  auto devs = discover(kIntelFlexRoot);
  auto p = plan_on(devs, 2);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(*p->device_kind, AcceleratorKind::kIntelGpu);
  for (const auto& rb : p->ranks) {
    EXPECT_TRUE(has_env(rb, "ZE_AFFINITY_MASK=0,1"));
    EXPECT_TRUE(has_env(rb, "ZE_ENABLE_PCI_ID_DEVICE_ORDER=1"));
  }
  EXPECT_EQ(p->ranks[1].numa_list, "1");
  EXPECT_EQ(format_binding_report("xpu1", 1, p->ranks[1], *p),
            "xpu1 rank 1 local_rank 1: cpus 24-47,72-95 (24 cores) NUMA 1, Intel GPU 1 "
            "[0000:ca:00.0 NUMA 1], ZE_AFFINITY_MASK=0,1");
  BindingOptions o;
  o.isolate_devices = true;
  auto iso = plan_on(devs, 2, o, {"ZE_ENABLE_PCI_ID_DEVICE_ORDER=1"});
  ASSERT_TRUE(iso.ok());
  EXPECT_TRUE(has_env(iso->ranks[1], "ZE_AFFINITY_MASK=1"));
  EXPECT_FALSE(has_var(iso->ranks[1], "ZE_ENABLE_PCI_ID_DEVICE_ORDER"));  // the user's stays
}

TEST(AcceleratorEnv, IntelFiltersWhatLevelZeroCannotOpen) {
  FakeRoot r;
  r.intel_gpu("0000:3a:00.0", 1, 128, 0);
  r.intel_gpu("0000:9a:00.0", 2, 129, 1, "xe", 1);
  r.intel_gpu("0000:b3:00.0", 3, 130, 1, "vfio-pci");                // passed through to a VM
  r.intel_gpu("0000:c3:00.0", 4, 131, 1, "i915", 1, 1, "0x120000");  // not display class
  auto d = discover(r.path());
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[1].pci_address, "0000:9a:00.0");
  EXPECT_EQ(d[1].tiles, 1);  // xe: device/tile0
  // A container given only renderD129 sees one GPU.
  r.remove("dev/dri/renderD128");
  d = discover(r.path());
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].pci_address, "0000:9a:00.0");
  EXPECT_EQ(d[0].index, 0);
}

TEST(AcceleratorEnv, IntelMultiTileCardsGetNoMask) {
  FakeRoot r;
  r.intel_gpu("0000:29:00.0", 0, 128, 0, "xe", 2);  // a two-stack Data Center GPU Max
  r.intel_gpu("0000:9a:00.0", 1, 129, 1, "xe", 2);
  auto d = discover(r.path());
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].tiles, 2);
  auto p = plan_on(d, 2);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_FALSE(has_var(p->ranks[0], "ZE_AFFINITY_MASK"));
  EXPECT_TRUE(p->ranks[0].devices.empty());
  EXPECT_TRUE(mentions(p->notes, "has 2 tiles"));
  BindingOptions one;
  one.devices_per_rank = 1;
  auto e = plan_on(d, 2, one);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message.find("ZE_FLAT_DEVICE_HIERARCHY"), std::string::npos)
      << e.error().message;
  // i915 with two GT entries: tiles or a media GT, sysfs does not say.
  FakeRoot m;
  m.intel_gpu("0000:29:00.0", 0, 128, 0, "i915", 1, 2);
  auto md = discover(m.path());
  ASSERT_EQ(md.size(), 1u);
  EXPECT_EQ(md[0].tiles, 0);
  auto mp = plan_on(md, 1);
  ASSERT_TRUE(mp.ok());
  EXPECT_FALSE(has_var(mp->ranks[0], "ZE_AFFINITY_MASK"));
  EXPECT_TRUE(mentions(mp->notes, "may have several tiles"));
}

TEST(AcceleratorEnv, IntelIntegratedNextToDiscreteMakesNumbersUncertain) {
  FakeRoot r;
  r.intel_gpu("0000:00:02.0", 0, 128, 0, "i915", 1, 1, "0x030000");
  r.intel_gpu("0000:03:00.0", 1, 129, 0, "i915");
  auto d = discover(r.path());
  ASSERT_EQ(d.size(), 2u);
  EXPECT_TRUE(d[0].integrated);
  auto p = plan_on(d, 2);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(has_var(p->ranks[1], "ZE_AFFINITY_MASK"));
  EXPECT_TRUE(mentions(p->notes, "integrated Intel GPU next to discrete ones"));
  // Alone, the integrated GPU is device 0 whatever the driver does.
  r.remove("sys/class/drm/card1");
  auto alone = plan_on(discover(r.path()), 1);
  ASSERT_TRUE(alone.ok());
  EXPECT_TRUE(has_env(alone->ranks[0], "ZE_AFFINITY_MASK=0"));
}

TEST(AcceleratorEnv, IntelUserSelectionsThatRenumber) {
  auto devs = discover(kIntelFlexRoot);
  auto order = plan_on(devs, 2, {}, {"ZE_ENABLE_PCI_ID_DEVICE_ORDER=0"});
  ASSERT_TRUE(order.ok());
  EXPECT_FALSE(has_var(order->ranks[0], "ZE_AFFINITY_MASK"));
  EXPECT_TRUE(mentions(order->notes, "not PCI bus order"));
  auto selector = plan_on(devs, 2, {}, {"ONEAPI_DEVICE_SELECTOR=level_zero:1"});
  ASSERT_TRUE(selector.ok());
  EXPECT_FALSE(has_var(selector->ranks[0], "ZE_AFFINITY_MASK"));
  EXPECT_TRUE(mentions(selector->notes, "ONEAPI_DEVICE_SELECTOR=level_zero:1 set by the user"));
  // A selector that only names the backend renumbers nothing.
  auto backend = plan_on(devs, 2, {}, {"ONEAPI_DEVICE_SELECTOR=level_zero:gpu"});
  ASSERT_TRUE(backend.ok());
  EXPECT_TRUE(has_env(backend->ranks[0], "ZE_AFFINITY_MASK=0,1"));
  auto user_mask = plan_on(devs, 1, {}, {"ZE_AFFINITY_MASK=1"});
  ASSERT_TRUE(user_mask.ok());
  EXPECT_FALSE(has_var(user_mask->ranks[0], "ZE_AFFINITY_MASK"));
  EXPECT_EQ(user_mask->ranks[0].devices, std::vector<int>{1});
  EXPECT_EQ(user_mask->ranks[0].numa_list, "1");
}

}  // namespace
}  // namespace ferry
