#pragma once
/// \file
/// What a rank uses, read from /proc: the rank's whole process tree (the rank and every
/// process below it, found through each task's `children` file), summed. One call reads a
/// stat file per process of the tree; nothing is kept open between samples.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ferry {

/// One process tree at one moment.
struct TreeReading {
  bool ok = false;  ///< false: the tree's first process is gone
  /// The tree's state as one letter: 'D' when any of its processes is in disk sleep, 'T'
  /// when its first process is stopped (SIGSTOP, or 't' traced), else its first process's
  /// letter (R, S, Z, ...).
  char state = '?';
  /// CPU time of the tree in clock ticks: user + system of every live process, plus what each
  /// reaped of its children (cutime, cstime), so a child's time is not lost when it ends.
  uint64_t cpu_ticks = 0;
  uint64_t rss_kb = 0;     ///< resident set of every process, summed
  uint32_t threads = 0;    ///< threads of every process, summed
  uint32_t processes = 0;  ///< processes in the tree
};

/// Reads the tree under `pid` from `proc` ("/proc" but in tests). Trees deeper than 64 or
/// larger than 4,096 processes are read that far.
TreeReading read_tree(pid_t pid, const std::string& proc = "/proc");

/// The first process's allowed CPUs as /proc/PID/status lists them ("0-3,8"), "" unknown.
std::string allowed_cpus(pid_t pid, const std::string& proc = "/proc");

/// The accelerators the process was given, from its environment: the first of
/// CUDA_VISIBLE_DEVICES, ASCEND_RT_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES
/// that is set, as "NAME=VALUE"; "" none (or the environment cannot be read).
std::string visible_devices(pid_t pid, const std::string& proc = "/proc");

/// The CPUs of each NUMA node of this machine as sysfs lists them ("0-15"), in node order,
/// read under `root` ("/" but in tests); one entry of every online CPU where sysfs shows no
/// nodes; empty when neither can be read.
std::vector<std::string> numa_cpu_lists(const std::string& root = "/");

/// One rank's use over the last interval.
struct RankUse {
  char state = '?';
  uint32_t cpu_permille = 0;  ///< 1000: one core busy the whole interval
  uint64_t rss_kb = 0;
  uint32_t threads = 0;
  uint32_t processes = 0;
};

/// Turns readings into use: keeps each pid's previous reading and its time.
class TreeSampler {
 public:
  using Clock = std::chrono::steady_clock;

  explicit TreeSampler(std::string proc = "/proc") : proc_(std::move(proc)) {}

  /// Reads `pid`'s tree now. The CPU use of a pid's first sample is over the time since
  /// `since` (its start), then since its previous sample. false: the tree is gone.
  bool sample(pid_t pid, Clock::time_point since, RankUse& use);
  /// Forgets every pid not in `live`.
  void keep_only(const std::vector<pid_t>& live);

 private:
  struct Last {
    uint64_t cpu_ticks = 0;
    Clock::time_point at;
  };
  std::string proc_;
  std::map<pid_t, Last> last_;
};

}  // namespace ferry
