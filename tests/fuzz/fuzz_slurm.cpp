// libFuzzer: Slurm's SLURM_JOB_NODELIST and SLURM_TASKS_PER_NODE, split at the first
// newline of the input.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "ferry/hosts/slurm.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto nl = text.find('\n');
  std::string nodes = text.substr(0, nl);
  std::string tasks = nl == std::string::npos ? "" : text.substr(nl + 1);
  (void)ferry::expand_hostlist(nodes);
  (void)ferry::expand_tasks_per_node(tasks);
  std::map<std::string, std::string> env{{"SLURM_JOB_NODELIST", nodes}};
  if (nl != std::string::npos) env["SLURM_TASKS_PER_NODE"] = tasks;
  auto hosts = ferry::hosts_from_slurm(env);
  if (hosts.ok())
    for (const auto& h : *hosts)
      if (h.name.empty() || h.slots < 1) __builtin_trap();
  return 0;
}
