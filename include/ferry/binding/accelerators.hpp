#pragma once
/// \file
/// Accelerators of one host, found in procfs/sysfs/devfs (Debian's hwloc has no CUDA/NVML
/// plugin, and ferryd must not need vendor libraries): NVIDIA GPUs, Ascend NPUs, AMD GPUs,
/// Intel GPUs, each with its PCI address and NUMA locality.
///
/// Every path is read below a configurable root ("/" on a real host), so tests build a fake
/// tree in a temporary directory.

#include <string>
#include <string_view>
#include <vector>

#include "ferry/common/result.hpp"

namespace ferry {

/// The accelerator families ferry assigns to ranks.
enum class AcceleratorKind { kNvidiaGpu, kAscendNpu, kAmdGpu, kIntelGpu };

/// One device as the vendor runtime numbers it.
struct Accelerator {
  AcceleratorKind kind = AcceleratorKind::kNvidiaGpu;
  /// What goes into the vendor's visible-devices variable: the PCI-bus-order index for
  /// NVIDIA (as nvidia-smi, with CUDA_DEVICE_ORDER=PCI_BUS_ID), the position among the
  /// /dev/davinciN nodes for Ascend, the GPU's position among KFD topology nodes for AMD, the
  /// PCI-bus-order index for Intel (Level Zero with ZE_ENABLE_PCI_ID_DEVICE_ORDER=1).
  int index = 0;
  std::string pci_address;            ///< "0000:3b:00.0"; "" when unknown
  bool pci_address_inferred = false;  ///< Ascend: paired by order, not read from the driver
  int numa_node = -1;                 ///< from sysfs; -1 unknown (VMs, single-node machines)
  std::vector<int> local_cpus;        ///< from sysfs local_cpulist; empty when unknown
  std::string model;  ///< "NVIDIA H100 80GB HBM3"; Ascend: its node, "/dev/davinci3"; or ""
  std::string uuid;   ///< "GPU-…" (NVIDIA), "" when not found
  /// Intel: the card's stacks (tiles), each a Level Zero root device in FLAT hierarchy mode;
  /// 0 when sysfs does not tell. Always 1 for the other kinds.
  int tiles = 1;
  bool integrated = false;  ///< Intel: the processor's own GPU (PCI 0000:00:02.0)
};

/// "NVIDIA GPU", "Ascend NPU", "AMD GPU", "Intel GPU".
const char* accelerator_kind_name(AcceleratorKind kind);
/// "CUDA_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
/// "ZE_AFFINITY_MASK": the one variable ferry sets to choose a kind's devices.
const char* visible_devices_variable(AcceleratorKind kind);

/// Finds the accelerators under `root`:
///  - NVIDIA: `proc/driver/nvidia/gpus/<bdf>/information` (the driver shows a container only
///    its own GPUs there); indices follow PCI bus order.
///  - Ascend: `dev/davinciN`; the PCI address from `sys/class/devdrv-class/davinciN/device`
///    when the driver links it, else paired in order with the Huawei accelerators of
///    `sys/bus/pci/devices` (vendor 0x19e5, device 0xd1xx/0xd5xx/0xd8xx or class 0x12),
///    flagged as inferred.
///  - AMD: `dev/kfd` and the GPU nodes (simd_count > 0) of
///    `sys/class/kfd/kfd/topology/nodes/*/properties` (location_id, domain).
///  - Intel: `sys/class/drm/cardN` whose `device` is an Intel (vendor 0x8086) display-class
///    PCI function bound to `i915` or `xe` with a render node (`device/drm/renderD*`; the
///    node must also exist under `dev/dri` when that directory exists), as Level Zero opens
///    them; tiles from `device/tileN` (xe) or `cardN/gt/gtN` (i915, one entry = one tile,
///    several = unknown: media GTs look the same); indices follow PCI bus order.
/// Locality of each: `sys/bus/pci/devices/<bdf>/numa_node` and `local_cpulist`.
/// Sorted by kind, then index. A missing tree is no error (no devices); Error only when
/// `root` itself is not a directory.
Result<std::vector<Accelerator>> discover_accelerators(const std::string& root = "/");

/// Parses `nvidia-smi --query-gpu=index,pci.bus_id,uuid,name --format=csv,noheader` output
/// (for callers that may run nvidia-smi where procfs is hidden). Lines that do not parse are
/// skipped. The PCI address is normalised to the sysfs form ("0000:3b:00.0").
std::vector<Accelerator> parse_nvidia_smi_query(std::string_view text);

/// Normalises a PCI address to sysfs form: lower case, 4-digit domain ("00000000:3B:00.0"
/// as nvidia-smi prints it → "0000:3b:00.0"). Returns "" for text that is not an address.
std::string normalize_pci_address(std::string_view text);

}  // namespace ferry
