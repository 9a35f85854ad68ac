#include "ferry/daemon/host_check.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>
#include <map>
#include <sstream>

#include "ferry/binding/accelerators.hpp"
#include "ferry/binding/topology.hpp"
#include "ferry/common/read_text_file.hpp"
#include "ferry/process/run_capture.hpp"

namespace ferry {
namespace {

// One python3 run for every version: importing torch takes seconds, once is enough.
constexpr const char* kProbe = R"(import platform, shutil, subprocess
print("python3=" + platform.python_version())
try:
    import torch
    print("torch=" + torch.__version__)
    print("CUDA=" + (torch.version.cuda or "none"))
    try:
        print("NCCL=" + ".".join(str(x) for x in torch.cuda.nccl.version()))
    except Exception:
        print("NCCL=none")
except Exception:
    pass
for tool, args in (("ompi_info", ["--version"]), ("mpichversion", [])):
    if shutil.which(tool):
        out = subprocess.run([tool] + args, capture_output=True, text=True).stdout.split()
        name = "Open MPI" if tool == "ompi_info" else "MPICH"
        ver = next((w.lstrip("v") for w in out if w.lstrip("v")[:1].isdigit()), "?")
        print("MPI=" + name + " " + ver)
        break
)";

constexpr std::array<const char*, 5> kSoftware = {"python3", "torch", "NCCL", "CUDA", "MPI"};

}  // namespace

std::vector<std::string> software_lines(const std::string& probe_output) {
  std::map<std::string, std::string> found;
  std::istringstream in(probe_output);
  for (std::string line; std::getline(in, line);)
    if (size_t eq = line.find('='); eq != std::string::npos && !found.contains(line.substr(0, eq)))
      found[line.substr(0, eq)] = line.substr(eq + 1);
  std::vector<std::string> out;
  for (const char* name : kSoftware) {
    auto it = found.find(name);
    out.push_back(std::string(name) + " " + (it == found.end() ? "absent" : it->second));
  }
  return out;
}

wire::CheckReport check_this_host() {
  wire::CheckReport r;
  r.version = FERRY_VERSION;
  if (auto topo = Topology::load_system()) {
    r.cores = static_cast<uint32_t>(topo->cores().size());
    r.numa_nodes = static_cast<uint32_t>(std::max<size_t>(topo->numa_nodes().size(), 1));
  }
  if (auto acc = discover_accelerators("/"); acc && !acc->empty()) {
    r.accelerators = static_cast<uint32_t>(acc->size());
    r.accelerator_kind = accelerator_kind_name(acc->front().kind);
  }
  std::error_code ec;
  for (const auto& dev : std::filesystem::directory_iterator("/sys/class/net", ec)) {
    auto speed = read_text_file(dev.path().string() + "/speed", 64, "speed");
    if (speed && !speed->empty() && (*speed)[0] != '-')
      r.link_speeds.push_back(dev.path().filename().string() + " " +
                              speed->substr(0, speed->find('\n')));
  }
  auto probe = run_capture_limited({"python3", "-c", kProbe}, std::chrono::seconds(30));
  r.software = software_lines(probe ? *probe : "");
  return r;
}

}  // namespace ferry
