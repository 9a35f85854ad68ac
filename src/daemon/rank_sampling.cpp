#include "rank_sampling.hpp"

#include <algorithm>

#include "ferry/wire/messages.hpp"

namespace ferry {

RankSampling::RankSampling(asio::io_context& io,
                           std::function<std::vector<RankSet::Running>()> running,
                           std::function<void(const std::string&)> send, std::string root)
    : timer_(io),
      running_(std::move(running)),
      send_(std::move(send)),
      root_(std::move(root)),
      gpus_(io) {}

void RankSampling::start(std::chrono::milliseconds interval) {
  const bool was_on = interval_.count() > 0;
  interval_ = interval;
  if (interval_.count() <= 0) return stop();
  if (was_on) return;  // the running timer takes the new interval at its next round
  gpus_.start(interval_);
  timer_.expires_after(interval_);
  timer_.async_wait([this](std::error_code ec) {
    if (!ec) tick();
  });
}

void RankSampling::stop() {
  interval_ = std::chrono::milliseconds(0);
  timer_.cancel();
  gpus_.stop();
}

void RankSampling::tick() {
  const auto ranks = running_();
  wire::Samples round;
  std::vector<pid_t> live;
  for (const auto& r : ranks) {
    RankUse use;
    if (!sampler_.sample(r.pid, r.started, use)) continue;
    live.push_back(r.pid);
    wire::RankSample s{r.rank,
                       static_cast<uint8_t>(use.state),
                       use.cpu_permille,
                       use.rss_kb,
                       use.threads,
                       use.processes,
                       {},
                       {}};
    if (described_.insert(r.pid).second) {
      s.cpus = allowed_cpus(r.pid);
      s.devices = visible_devices(r.pid);
    }
    round.ranks.push_back(std::move(s));
  }
  sampler_.keep_only(live);
  for (auto it = described_.begin(); it != described_.end();)
    it = std::find(live.begin(), live.end(), *it) == live.end() ? described_.erase(it)
                                                                : std::next(it);
  if (!round.ranks.empty()) {
    if (!layout_sent_) {
      layout_sent_ = true;
      round.numa = numa_cpu_lists(root_);
    }
    round.accelerators = gpus_.note();
    for (const GpuUse& g : gpus_.latest())
      round.gpus.push_back({g.index, g.uuid, g.util_percent, g.mem_used_mib, g.mem_total_mib});
    send_(wire::encode(round));
  }
  if (interval_.count() <= 0) return;
  timer_.expires_after(interval_);
  timer_.async_wait([this](std::error_code ec) {
    if (!ec) tick();
  });
}

}  // namespace ferry
