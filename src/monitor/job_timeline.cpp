// The job's record: tracks, series, marks.
#include "ferry/monitor/job_timeline.hpp"

#include <algorithm>
#include <utility>

namespace ferry {

void Series::add(double t, double v) {
  if (pending_ > 0 && pending_ < merge_) {
    // Fold into the last point: the mean of its samples, at the latest time.
    SeriesPoint& p = points_.back();
    p.v = static_cast<float>((p.v * static_cast<double>(pending_) + v) /
                             static_cast<double>(pending_ + 1));
    p.t = static_cast<float>(t);
    ++pending_;
    return;
  }
  if (points_.size() == kMaxPoints) {
    // Full: merge neighbours, each kept point now stands for twice as many samples.
    std::vector<SeriesPoint> merged;
    merged.reserve(kMaxPoints / 2 + 1);
    for (size_t i = 0; i + 1 < points_.size(); i += 2)
      merged.push_back({points_[i + 1].t, (points_[i].v + points_[i + 1].v) / 2});
    points_ = std::move(merged);
    merge_ *= 2;
  }
  points_.push_back({static_cast<float>(t), static_cast<float>(v)});
  pending_ = 1;
}

void JobTimeline::begin(std::string command, std::string started_at) {
  command_ = std::move(command);
  started_at_ = std::move(started_at);
}

void JobTimeline::set_host(size_t i, const std::string& name) {
  if (hosts_.size() <= i) hosts_.resize(i + 1);
  hosts_[i].name = name;
}

void JobTimeline::host_layout(size_t host, std::vector<std::string> numa,
                              std::string accelerators) {
  if (host >= hosts_.size()) return;
  hosts_[host].numa = std::move(numa);
  hosts_[host].accelerators = std::move(accelerators);
}

RankTrack* JobTimeline::current(int rank) {
  auto it = std::find_if(ranks_.rbegin(), ranks_.rend(),
                         [rank](const RankTrack& r) { return r.rank == rank; });
  return it == ranks_.rend() ? nullptr : &*it;
}

void JobTimeline::rank_started(int attempt, int rank, std::string label, size_t host, double t) {
  RankTrack r;
  r.rank = rank;
  r.label = std::move(label);
  r.host = host;
  r.attempt = attempt;
  r.start = t;
  ranks_.push_back(std::move(r));
}

void JobTimeline::rank_output(int rank, double t) {
  if (RankTrack* r = current(rank); r && r->first_output < 0) r->first_output = t;
}

void JobTimeline::rank_ended(int rank, double t, std::string outcome, bool failed, uint32_t wall_ms,
                             uint32_t cpu_ms, uint32_t max_rss_kb) {
  RankTrack* r = current(rank);
  if (!r || r->end >= 0) return;
  r->end = t;
  r->outcome = std::move(outcome);
  r->failed = failed;
  r->wall_ms = wall_ms;
  r->cpu_ms = cpu_ms;
  r->max_rss_kb = max_rss_kb;
  for (auto& span : r->lagging)
    if (span.second < 0) span.second = t;
}

void JobTimeline::sample(size_t host, double t, const std::vector<RankPoint>& ranks) {
  if (host >= hosts_.size()) return;
  double cpu = 0, rss = 0;
  for (const RankPoint& p : ranks) {
    RankTrack* r = current(p.rank);
    if (!r || r->end >= 0) continue;
    r->cpu.add(t, p.cpu_percent);
    r->rss.add(t, p.rss_mib);
    if (!p.cpus.empty()) r->cpus = p.cpus;
    if (!p.devices.empty()) r->devices = p.devices;
    cpu += p.cpu_percent;
    rss += p.rss_mib;
  }
  hosts_[host].cpu.add(t, cpu);
  hosts_[host].rss.add(t, rss);
}

void JobTimeline::gpu_sample(size_t host, double t,
                             const std::vector<std::pair<uint32_t, double>>& gpus) {
  if (host >= hosts_.size()) return;
  for (const auto& [index, util] : gpus) hosts_[host].gpu_util[index].add(t, util);
}

void JobTimeline::lagging(int rank, double t, bool on) {
  RankTrack* r = current(rank);
  if (!r || (on && r->end >= 0)) return;  // an ended rank lags no more
  if (on) {
    if (r->lagging.empty() || r->lagging.back().second >= 0) r->lagging.emplace_back(t, -1);
  } else if (!r->lagging.empty() && r->lagging.back().second < 0) {
    r->lagging.back().second = t;
  }
}

void JobTimeline::mark(double t, std::string kind, std::string text, int host) {
  marks_.push_back({t, std::move(kind), std::move(text), host});
}

void JobTimeline::finish(double t, int exit_status) {
  end_ = t;
  exit_status_ = exit_status;
  for (RankTrack& r : ranks_) {
    if (r.end >= 0) continue;
    r.end = t;
    if (r.outcome.empty()) r.outcome = "still running";
    for (auto& span : r.lagging)
      if (span.second < 0) span.second = t;
  }
}

}  // namespace ferry
