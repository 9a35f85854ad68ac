#pragma once
/// \file
/// What ferryd samples of its running ranks for the job's view (`--report`, `--trace`,
/// `--stragglers`): sent every HostSpec::sample_ms while ranks run, when the front end asked
/// for samples. Part of messages.hpp, which includes it once MsgType is declared: include
/// messages.hpp, not this file.

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

namespace ferry::wire {

/// One running rank (its whole process tree) over the last interval.
struct RankSample {
  int32_t rank = 0;
  uint8_t state = '?';        ///< R, S, D, T, Z: the tree's state (monitor/proc_tree.hpp)
  uint32_t cpu_permille = 0;  ///< 1000 = one core busy the whole interval
  uint64_t rss_kb = 0;
  uint32_t threads = 0;
  uint32_t processes = 0;
  /// Sent with a rank's first sample only ("" afterwards): its allowed CPUs ("0-3") and the
  /// devices it was given ("CUDA_VISIBLE_DEVICES=1", "" none).
  std::string cpus;
  std::string devices;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.rank, m.state, m.cpu_permille, m.rss_kb, m.threads, m.processes, m.cpus,
                    m.devices);
  }
};

/// One NVIDIA GPU of the host as nvidia-smi last printed it.
struct GpuSample {
  uint32_t index = 0;
  std::string uuid;
  uint32_t util_percent = 0;
  uint32_t mem_used_mib = 0;
  uint32_t mem_total_mib = 0;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.index, m.uuid, m.util_percent, m.mem_used_mib, m.mem_total_mib);
  }
};

/// d→f: one round of samples of this host's running ranks, its GPUs' use where it can be
/// read, and in a line how its accelerators are read or why not ("" nothing to say). The
/// first round of a connection also carries each NUMA node's CPUs ("0-15").
struct Samples {
  static constexpr MsgType kType = MsgType::kSamples;
  std::vector<RankSample> ranks;
  std::vector<std::string> numa;
  std::string accelerators;
  std::vector<GpuSample> gpus;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.ranks, m.numa, m.accelerators, m.gpus);
  }
};

}  // namespace ferry::wire
