#pragma once
// Test support for the binding tests: a fake "/" with procfs, sysfs and devfs entries as
// drivers show them, the synthetic x86 topology, and lookups into a rank's environment.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ferry/binding/accelerators.hpp"
#include "ferry/binding/plan.hpp"
#include "ferry/binding/topology.hpp"

namespace ferry::test_support {

namespace fs = std::filesystem;

inline const std::string kX86Xml =
    std::string(FERRY_TEST_DATA) + "/binding/x86-2socket-24core-ht.xml";
inline const char* const kNuma0 = "0-23,48-71";
inline const char* const kNuma1 = "24-47,72-95";

/// A fake "/" in a temporary directory, removed afterwards.
class FakeRoot {
 public:
  FakeRoot() {
    std::string tmpl = (fs::temp_directory_path() / "ferry-binding-XXXXXX").string();
    dir_ = ::mkdtemp(tmpl.data()) ? tmpl : "";
    EXPECT_FALSE(dir_.empty());
  }
  ~FakeRoot() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  FakeRoot(const FakeRoot&) = delete;
  FakeRoot& operator=(const FakeRoot&) = delete;
  const std::string& path() const { return dir_; }

  void file(const std::string& rel, const std::string& text) {
    fs::path p = fs::path(dir_) / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  void symlink(const std::string& rel, const std::string& target) {
    fs::path p = fs::path(dir_) / rel;
    fs::create_directories(p.parent_path());
    fs::create_symlink(target, p);
  }
  void remove(const std::string& rel) { fs::remove_all(fs::path(dir_) / rel); }

  void pci(const std::string& bdf, int numa, const std::string& cpulist,
           const std::string& vendor = "0x10de", const std::string& device = "0x2330",
           const std::string& cls = "0x030200") {
    const std::string d = "sys/bus/pci/devices/" + bdf + "/";
    file(d + "numa_node", std::to_string(numa) + "\n");
    if (!cpulist.empty()) file(d + "local_cpulist", cpulist + "\n");
    file(d + "vendor", vendor + "\n");
    file(d + "device", device + "\n");
    file(d + "class", cls + "\n");
  }

  // An NVIDIA GPU as the driver's procfs shows it, with its PCI function.
  void nvidia(const std::string& bdf, int numa, const std::string& cpulist) {
    file("proc/driver/nvidia/gpus/" + bdf + "/information",
         "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 0\nGPU UUID: \t GPU-" + bdf.substr(5, 2) +
             "000000-0000-0000-0000-000000000000\nBus Type: \t PCIe\nBus Location: \t " + bdf +
             "\nDevice Minor: \t 0\n");
    pci(bdf, numa, cpulist);
  }
  void nvidia_gpu(const std::string& bdf, int numa) {
    file("proc/driver/nvidia/gpus/" + bdf + "/information",
         "Model: \t\t NVIDIA H100\nBus Location: \t " + bdf + "\n");
    pci(bdf, numa, numa == 0 ? kNuma0 : kNuma1, "0x10de", "0x2330", "0x030200");
  }

  // An Intel GPU as sysfs shows it: /sys/class/drm/cardN/device -> the PCI function.
  // `tiles` < 0: i915 without a gt directory; `gts`: i915 gt/gtM entries; xe: device/tileM.
  void intel_gpu(const std::string& bdf, int card, int render, int numa,
                 const std::string& driver = "i915", int tiles = 1, int gts = 1,
                 const std::string& cls = "0x038000") {
    pci(bdf, numa, numa == 0 ? kNuma0 : kNuma1, "0x8086", "0x56c0", cls);
    const std::string d = "sys/bus/pci/devices/" + bdf + "/";
    file(d + "uevent",
         "DRIVER=" + driver + "\nPCI_CLASS=38000\nPCI_ID=8086:56C0\nPCI_SLOT_NAME=" + bdf + "\n");
    file(d + "drm/card" + std::to_string(card) + "/dev", "226:0\n");
    file(d + "drm/renderD" + std::to_string(render) + "/dev", "226:128\n");
    const std::string c = "sys/class/drm/card" + std::to_string(card);
    fs::create_directories(fs::path(dir_) / c);
    fs::create_symlink("../../../bus/pci/devices/" + bdf, fs::path(dir_) / c / "device");
    if (driver == "xe") {
      for (int t = 0; t < tiles; ++t)
        file(d + "tile" + std::to_string(t) + "/physical_vram_size_bytes", "0\n");
    } else {
      for (int g = 0; g < gts; ++g) file(c + "/gt/gt" + std::to_string(g) + "/id", "0\n");
    }
    file("dev/dri/renderD" + std::to_string(render), "");
  }

  // `n` Ascend NPUs (/dev/davinci0..) with their Huawei PCI functions, 0-3 on NUMA 0.
  void ascend_npus(int n = 8) {
    for (int i = 0; i < n; ++i) {
      file("dev/davinci" + std::to_string(i), "");
      char bdf[32];
      std::snprintf(bdf, sizeof bdf, "0000:%02x:00.0", 0x10 * (i + 1));
      pci(bdf, i < 4 ? 0 : 1, i < 4 ? kNuma0 : kNuma1, "0x19e5", "0xd801", "0x120000");
    }
  }

  // cgroup files as the kernel shows them. `self` is proc/self/cgroup's text; `dir` is a
  // cgroup directory relative to its mount ("" = the mount root, "kubepods/pod1").
  void proc_self_cgroup(const std::string& self) { file("proc/self/cgroup", self); }
  void cpu_max(const std::string& dir, const std::string& text) {
    file(cgroup_dir("sys/fs/cgroup", dir) + "cpu.max", text);
  }
  // cgroup v1: `mount` is the controller mount's name ("cpu,cpuacct", "cpu").
  void cfs(const std::string& mount, const std::string& dir, const std::string& quota,
           const std::string& period = "100000\n") {
    const std::string d = cgroup_dir("sys/fs/cgroup/" + mount, dir);
    file(d + "cpu.cfs_quota_us", quota);
    file(d + "cpu.cfs_period_us", period);
  }

  // AMD GPUs in KFD topology order: node 1 behind socket 1, node 2 behind socket 0.
  void amd_gpus() {
    file("dev/kfd", "");
    const std::string nodes = "sys/class/kfd/kfd/topology/nodes/";
    file(nodes + "0/properties", "cpu_cores_count 48\nsimd_count 0\n");
    file(nodes + "1/properties", "simd_count 416\nlocation_id 49408\ndomain 0\n");
    file(nodes + "2/properties", "simd_count 416\nlocation_id 8448\ndomain 0\n");
    pci("0000:c1:00.0", 1, kNuma1, "0x1002", "0x740f", "0x038000");
    pci("0000:21:00.0", 0, kNuma0, "0x1002", "0x740f", "0x038000");
  }

 private:
  static std::string cgroup_dir(const std::string& mount, const std::string& dir) {
    return mount + "/" + (dir.empty() ? "" : dir + "/");
  }

  std::string dir_;
};

/// The synthetic 2-socket, 24-core, hyperthreaded x86 machine.
inline Topology x86() {
  auto t = Topology::load_xml(kX86Xml);
  EXPECT_TRUE(t.ok());
  return std::move(t.value());
}

inline std::vector<Accelerator> discover(const std::string& root) {
  auto d = discover_accelerators(root);
  EXPECT_TRUE(d.ok()) << (d.ok() ? "" : d.error().message);
  return d.ok() ? std::move(d.value()) : std::vector<Accelerator>{};
}
inline std::vector<Accelerator> discover(const FakeRoot& r) { return discover(r.path()); }

inline bool has_env(const RankBinding& r, const std::string& kv) {
  return std::find(r.env.begin(), r.env.end(), kv) != r.env.end();
}

inline bool has_var(const RankBinding& r, const std::string& name) {
  return std::any_of(r.env.begin(), r.env.end(),
                     [&](const std::string& kv) { return kv.starts_with(name + "="); });
}

inline bool mentions(const std::vector<std::string>& lines, const std::string& text) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& l) { return l.find(text) != std::string::npos; });
}

}  // namespace ferry::test_support
