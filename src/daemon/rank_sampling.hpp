#pragma once
// ferryd's samples of its running ranks for the job's view (--report, --trace, --stragglers):
// every HostSpec::sample_ms, each running rank's process tree read from /proc (CPU, memory,
// state, threads) and the host's GPUs (GpuWatch), one Samples frame per round. Off unless the front
// end asked; a round with no running rank sends nothing.

#include <asio.hpp>
#include <chrono>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "ferry/monitor/proc_tree.hpp"
#include "gpu_watch.hpp"
#include "rank_set.hpp"

namespace ferry {

class RankSampling {
 public:
  /// `running` lists the ranks to sample; `send` takes each encoded Samples frame; `root`
  /// is where sysfs lies ("/" but in tests).
  RankSampling(asio::io_context& io, std::function<std::vector<RankSet::Running>()> running,
               std::function<void(const std::string&)> send, std::string root);

  /// Samples every `interval` from now on (a second call changes the interval); 0 stops.
  void start(std::chrono::milliseconds interval);
  void stop();

 private:
  void tick();

  asio::steady_timer timer_;
  std::function<std::vector<RankSet::Running>()> running_;
  std::function<void(const std::string&)> send_;
  std::string root_;
  std::chrono::milliseconds interval_{0};
  TreeSampler sampler_;
  GpuWatch gpus_;
  std::set<pid_t> described_;  // pids whose CPUs and devices went out already
  bool layout_sent_ = false;
};

}  // namespace ferry
