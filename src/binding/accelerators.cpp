#include "ferry/binding/accelerators.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>

#include "ferry/binding/id_list.hpp"
#include "ferry/common/read_text_file.hpp"
#include "ferry/common/text.hpp"

namespace ferry {

namespace fs = std::filesystem;

namespace {

// Device files are sysfs attributes and driver info files of a page or two; the bound only
// stops a broken or fake tree from making ferryd read without end.
constexpr std::size_t kDeviceFileLimit = 64u << 10;

// nullopt when unreadable: a device that lacks a file is judged on the others.
std::optional<std::string> read_text(const fs::path& p) {
  auto text = read_text_file(p.string(), kDeviceFileLimit, "device attribute file");
  if (!text) return std::nullopt;
  return std::move(*text);
}

std::vector<std::string> list_dir(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    names.push_back(it->path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

bool path_exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

std::optional<long long> parse_number(std::string_view s) {
  const std::string t(trim(s));
  if (t.empty()) return std::nullopt;
  try {
    size_t used = 0;
    long long v = std::stoll(t, &used, 0);  // base 0: "0x19e5" and "-1" alike
    if (used != t.size()) return std::nullopt;
    return v;
  } catch (...) {
    return std::nullopt;
  }
}

// Fills numa_node and local_cpus from sys/bus/pci/devices/<bdf>.
void add_locality(const fs::path& root, Accelerator& a) {
  if (a.pci_address.empty()) return;
  const fs::path dev = root / "sys/bus/pci/devices" / a.pci_address;
  if (auto t = read_text(dev / "numa_node"))
    if (auto v = parse_number(*t); v && *v >= 0) a.numa_node = static_cast<int>(*v);
  if (auto t = read_text(dev / "local_cpulist"))
    if (auto ids = parse_id_list(*t); ids.ok()) a.local_cpus = std::move(ids.value());
}

// "Key:   value" lines of /proc/driver/nvidia/gpus/<bdf>/information.
std::string field(const std::string& text, std::string_view key) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with(key) && line.size() > key.size() && line[key.size()] == ':')
      return std::string(trim(std::string_view(line).substr(key.size() + 1)));
  }
  return "";
}

std::vector<Accelerator> find_nvidia(const fs::path& root) {
  std::vector<Accelerator> out;
  const fs::path dir = root / "proc/driver/nvidia/gpus";
  for (const auto& name : list_dir(dir)) {
    Accelerator a;
    a.kind = AcceleratorKind::kNvidiaGpu;
    auto info = read_text(dir / name / "information").value_or("");
    a.pci_address = normalize_pci_address(name);
    if (a.pci_address.empty()) a.pci_address = normalize_pci_address(field(info, "Bus Location"));
    if (a.pci_address.empty()) continue;
    a.model = field(info, "Model");
    a.uuid = field(info, "GPU UUID");
    out.push_back(std::move(a));
  }
  // nvidia-smi (and CUDA with CUDA_DEVICE_ORDER=PCI_BUS_ID) number GPUs in PCI bus order.
  std::sort(out.begin(), out.end(), [](const Accelerator& x, const Accelerator& y) {
    return x.pci_address < y.pci_address;
  });
  for (size_t i = 0; i < out.size(); ++i) out[i].index = static_cast<int>(i);
  return out;
}

bool is_ascend_pci(const fs::path& dev) {
  auto vendor = parse_number(read_text(dev / "vendor").value_or(""));
  if (!vendor || *vendor != 0x19e5) return false;  // Huawei
  // Kunpeng SoCs carry many Huawei functions (NICs, SAS, ...): keep the accelerators only.
  auto device = parse_number(read_text(dev / "device").value_or(""));
  auto cls = parse_number(read_text(dev / "class").value_or(""));
  if (cls && ((*cls >> 16) & 0xff) == 0x12) return true;  // PCI "processing accelerator"
  if (!device) return false;
  const long long family = *device & 0xff00;
  return family == 0xd100 || family == 0xd500 || family == 0xd800;
}

std::vector<Accelerator> find_ascend(const fs::path& root) {
  std::vector<std::pair<int, std::string>> nodes;  // N of /dev/davinciN, name
  for (const auto& name : list_dir(root / "dev")) {
    if (!name.starts_with("davinci") || name.size() == 7) continue;
    auto n = parse_number(std::string_view(name).substr(7));
    if (!n ||
        !std::all_of(name.begin() + 7, name.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    nodes.emplace_back(static_cast<int>(*n), name);
  }
  if (nodes.empty()) return {};  // no NPU here: no need to read every PCI function's vendor
  std::sort(nodes.begin(), nodes.end());
  std::vector<std::string> pci;  // Huawei accelerators in bus order, for pairing
  const fs::path pci_dir = root / "sys/bus/pci/devices";
  for (const auto& name : list_dir(pci_dir))
    if (is_ascend_pci(pci_dir / name)) pci.push_back(name);
  std::vector<Accelerator> out;
  for (size_t i = 0; i < nodes.size(); ++i) {
    Accelerator a;
    a.kind = AcceleratorKind::kAscendNpu;
    // The runtime's logical ids count the davinci nodes this namespace sees, in order.
    a.index = static_cast<int>(i);
    a.model = "/dev/" + nodes[i].second;
    std::error_code ec;
    fs::path link =
        fs::read_symlink(root / "sys/class/devdrv-class" / nodes[i].second / "device", ec);
    if (!ec) a.pci_address = normalize_pci_address(link.filename().string());
    if (a.pci_address.empty() && nodes[i].first < static_cast<int>(pci.size())) {
      // Physical ids follow PCI probe order; a container may see fewer nodes than functions.
      a.pci_address = normalize_pci_address(pci[nodes[i].first]);
      a.pci_address_inferred = !a.pci_address.empty();
    }
    out.push_back(std::move(a));
  }
  return out;
}

std::vector<Accelerator> find_amd(const fs::path& root) {
  std::vector<Accelerator> out;
  if (!path_exists(root / "dev/kfd")) return out;
  const fs::path dir = root / "sys/class/kfd/kfd/topology/nodes";
  std::vector<std::pair<long long, std::string>> nodes;
  for (const auto& name : list_dir(dir))
    if (auto n = parse_number(name)) nodes.emplace_back(*n, name);
  std::sort(nodes.begin(), nodes.end());
  // ROCr drops GPUs whose render node this process cannot see (containers).
  const bool check_render = path_exists(root / "dev/dri");
  for (const auto& [n, name] : nodes) {
    auto text = read_text(dir / name / "properties");
    if (!text) continue;
    std::map<std::string, long long, std::less<>> props;
    std::istringstream in(*text);
    std::string key, value;
    while (in >> key >> value)
      if (auto v = parse_number(value)) props[key] = *v;
    if (props["simd_count"] <= 0) continue;  // a CPU node
    if (check_render && props.contains("drm_render_minor") &&
        !path_exists(root / "dev/dri" / ("renderD" + std::to_string(props["drm_render_minor"]))))
      continue;
    Accelerator a;
    a.kind = AcceleratorKind::kAmdGpu;
    a.index = static_cast<int>(out.size());
    const long long loc = props["location_id"];
    char bdf[32];
    std::snprintf(bdf, sizeof bdf, "%04llx:%02llx:%02llx.%llx", props["domain"] & 0xffff,
                  (loc >> 8) & 0xff, (loc >> 3) & 0x1f, loc & 0x7);
    if (loc != 0 || props.contains("domain")) a.pci_address = bdf;
    if (props["unique_id"] != 0) {
      char uuid[40];
      std::snprintf(uuid, sizeof uuid, "GPU-%016llx",
                    static_cast<unsigned long long>(props["unique_id"]));
      a.uuid = uuid;
    }
    out.push_back(std::move(a));
  }
  return out;
}

// True when `name` is `prefix` followed by one or more digits ("card1", not "card1-DP-2").
bool numbered(std::string_view name, std::string_view prefix) {
  if (name.size() <= prefix.size() || !name.starts_with(prefix)) return false;
  return std::all_of(name.begin() + prefix.size(), name.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

int count_numbered(const fs::path& dir, std::string_view prefix) {
  int n = 0;
  for (const auto& name : list_dir(dir)) n += numbered(name, prefix) ? 1 : 0;
  return n;
}

// "KEY=value" lines of a sysfs uevent file.
std::string uevent_field(const std::string& text, std::string_view key) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.size() > key.size() && line.starts_with(key) && line[key.size()] == '=')
      return std::string(trim(std::string_view(line).substr(key.size() + 1)));
  return "";
}

// Level Zero's Linux driver (compute-runtime) opens the render node of every DRM device bound
// to i915 or xe (/dev/dri/by-path/pci-*-render), so that is what is counted here.
std::vector<Accelerator> find_intel(const fs::path& root) {
  std::vector<Accelerator> out;
  const fs::path drm = root / "sys/class/drm";
  const bool check_render = path_exists(root / "dev/dri");
  for (const auto& card : list_dir(drm)) {
    if (!numbered(card, "card")) continue;  // connectors ("card1-DP-1"), renderD*, version
    const fs::path dev = drm / card / "device";
    auto vendor = parse_number(read_text(dev / "vendor").value_or(""));
    auto cls = parse_number(read_text(dev / "class").value_or(""));
    if (!vendor || *vendor != 0x8086 || !cls || ((*cls >> 16) & 0xff) != 0x03) continue;
    const std::string uevent = read_text(dev / "uevent").value_or("");
    const std::string driver = uevent_field(uevent, "DRIVER");
    if (driver != "i915" && driver != "xe") continue;
    std::string render;
    for (const auto& name : list_dir(dev / "drm"))
      if (numbered(name, "renderD")) render = name;
    if (render.empty()) continue;  // a display-only function: no compute
    if (check_render && !path_exists(root / "dev/dri" / render)) continue;  // not in this container
    Accelerator a;
    a.kind = AcceleratorKind::kIntelGpu;
    a.pci_address = normalize_pci_address(uevent_field(uevent, "PCI_SLOT_NAME"));
    if (a.pci_address.empty()) {
      std::error_code ec;
      fs::path link = fs::read_symlink(dev, ec);
      if (!ec) a.pci_address = normalize_pci_address(link.filename().string());
    }
    if (a.pci_address.empty()) continue;  // cannot be put in bus order
    a.model = "/dev/dri/" + render;
    // Intel's integrated GPUs have sat at bus 0, device 2, function 0 since the first one.
    a.integrated = a.pci_address == "0000:00:02.0";
    if (driver == "xe") {
      a.tiles = count_numbered(dev, "tile");  // xe: device/tile0, device/tile1, ...
    } else {
      // i915 lists one gtN per tile, but also a media GT (Meteor Lake) as gt1: several
      // entries do not say how many tiles there are. No gt directory: a kernel that predates
      // multi-tile support, so one tile.
      const int gts = count_numbered(drm / card / "gt", "gt");
      a.tiles = gts <= 1 ? 1 : 0;
    }
    out.push_back(std::move(a));
  }
  std::sort(out.begin(), out.end(), [](const Accelerator& x, const Accelerator& y) {
    return x.pci_address < y.pci_address;
  });
  for (size_t i = 0; i < out.size(); ++i) out[i].index = static_cast<int>(i);
  return out;
}

}  // namespace

const char* accelerator_kind_name(AcceleratorKind kind) {
  switch (kind) {
    case AcceleratorKind::kNvidiaGpu:
      return "NVIDIA GPU";
    case AcceleratorKind::kAscendNpu:
      return "Ascend NPU";
    case AcceleratorKind::kAmdGpu:
      return "AMD GPU";
    case AcceleratorKind::kIntelGpu:
      return "Intel GPU";
  }
  return "device";
}

const char* visible_devices_variable(AcceleratorKind kind) {
  switch (kind) {
    case AcceleratorKind::kNvidiaGpu:
      return "CUDA_VISIBLE_DEVICES";
    case AcceleratorKind::kAscendNpu:
      return "ASCEND_RT_VISIBLE_DEVICES";
    case AcceleratorKind::kAmdGpu:
      // Not HIP_VISIBLE_DEVICES: ROCr applies this one below every ROCm runtime (HIP, OpenCL),
      // in KFD topology order, which is how find_amd() numbers GPUs; HIP's indices count only
      // what ROCr left visible, so setting both would renumber twice (docs/binding.md).
      return "ROCR_VISIBLE_DEVICES";
    case AcceleratorKind::kIntelGpu:
      return "ZE_AFFINITY_MASK";
  }
  return "";
}

std::string normalize_pci_address(std::string_view text) {
  const std::string t(trim(text));
  unsigned dom = 0, bus = 0, dev = 0, fn = 0;
  char tail = 0;
  int n = std::sscanf(t.c_str(), "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn, &tail);
  if (n != 4) {
    dom = 0;
    n = std::sscanf(t.c_str(), "%x:%x.%x%c", &bus, &dev, &fn, &tail);
    if (n != 3) return "";
  }
  if (bus > 0xff || dev > 0x1f || fn > 7) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", dom & 0xffff, bus, dev, fn);
  return buf;
}

std::vector<Accelerator> parse_nvidia_smi_query(std::string_view text) {
  std::vector<Accelerator> out;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> cols;
    std::istringstream ls(line);
    std::string col;
    while (std::getline(ls, col, ',')) cols.emplace_back(trim(col));
    if (cols.size() < 2) continue;
    auto idx = parse_number(cols[0]);
    std::string bdf = normalize_pci_address(cols[1]);
    if (!idx || *idx < 0 || bdf.empty()) continue;
    Accelerator a;
    a.kind = AcceleratorKind::kNvidiaGpu;
    a.index = static_cast<int>(*idx);
    a.pci_address = bdf;
    if (cols.size() > 2) a.uuid = cols[2];
    if (cols.size() > 3) a.model = cols[3];
    out.push_back(std::move(a));
  }
  return out;
}

Result<std::vector<Accelerator>> discover_accelerators(const std::string& root) {
  std::error_code ec;
  const fs::path base = root.empty() ? fs::path("/") : fs::path(root);
  if (!fs::is_directory(base, ec))
    return make_error("device discovery: root '" + root + "' is not a directory");
  std::vector<Accelerator> all;
  for (auto found : {find_nvidia(base), find_ascend(base), find_amd(base), find_intel(base)})
    for (auto& a : found) {
      add_locality(base, a);
      all.push_back(std::move(a));
    }
  return all;
}

}  // namespace ferry
