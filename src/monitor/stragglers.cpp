// The straggler rules over each rank's window of samples.
#include "ferry/monitor/stragglers.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ferry {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string seconds_text(std::chrono::seconds s) { return std::to_string(s.count()) + " s"; }

}  // namespace

std::string cpu_percent(double permille) {
  return std::to_string(static_cast<long>(std::lround(permille / 10.0))) + "%";
}

std::string byte_rate(double bytes_per_s) {
  char buf[32];
  if (bytes_per_s < 1000) {
    std::snprintf(buf, sizeof buf, "%.0f B/s", bytes_per_s);
  } else if (bytes_per_s < 1e6) {
    std::snprintf(buf, sizeof buf, "%.1f KB/s", bytes_per_s / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f MB/s", bytes_per_s / 1e6);
  }
  return buf;
}

StragglerWatch::Window StragglerWatch::window_of(const History& h) {
  Window w;
  const Point& last = h.points.back();
  const Point& first = h.points.front();
  double cpu = 0;
  size_t n = 0;
  char stuck = (last.state == 'T' || last.state == 'D') ? last.state : '\0';
  // The first point only marks where the window starts: its CPU is of the time before.
  for (size_t i = 1; i < h.points.size(); ++i) {
    cpu += h.points[i].cpu_permille;
    ++n;
    if (h.points[i].state != stuck) stuck = '\0';
  }
  w.cpu = n ? cpu / static_cast<double>(n) : 0;
  w.printed = last.output_bytes - std::min(first.output_bytes, last.output_bytes);
  w.stuck = stuck;
  w.paused = last.state == 'T' || last.state == 'D';
  return w;
}

std::vector<Straggler> StragglerWatch::observe(Clock::time_point now,
                                               const std::vector<RankTick>& ranks) {
  // Ranks gone from this round ended: forget them.
  for (auto it = ranks_.begin(); it != ranks_.end();) {
    const bool present = std::any_of(ranks.begin(), ranks.end(),
                                     [&](const RankTick& t) { return t.rank == it->first; });
    it = present ? std::next(it) : ranks_.erase(it);
  }
  for (const RankTick& t : ranks) {
    History& h = ranks_[t.rank];
    h.label = t.label;
    h.points.push_back({now, t.state, t.cpu_permille, t.output_bytes});
    // Keep the newest point at or before the window's start, so the window is whole.
    while (h.points.size() > 2 && h.points[1].at <= now - rules_.window) h.points.pop_front();
  }
  // Only ranks watched for a whole window are judged, against each other.
  std::map<int, Window> full;
  for (const auto& [rank, h] : ranks_)
    if (h.points.size() >= 2 && h.points.front().at <= now - rules_.window)
      full[rank] = window_of(h);
  std::vector<Straggler> found;
  if (full.empty()) return found;
  // The measure: the ranks running now (a stopped rank is named for that, not a peer).
  std::vector<double> cpus, printed;
  for (const auto& [rank, w] : full) {
    if (w.paused) continue;
    cpus.push_back(w.cpu);
    printed.push_back(static_cast<double>(w.printed));
  }
  const bool peers = cpus.size() >= 2;
  const double mid_cpu = median(cpus);
  const double mid_printed = median(printed);
  const auto window_s = static_cast<double>(rules_.window.count());
  for (const auto& [rank, w] : full) {
    History& h = ranks_[rank];
    std::string why;
    const std::string span = seconds_text(rules_.window);
    if (w.stuck == 'T') {
      why = h.label + " has been stopped (SIGSTOP or a debugger) for " + span;
    } else if (w.stuck == 'D') {
      why = h.label + " has been in disk sleep (D state) for " + span;
    } else if (peers && mid_cpu >= rules_.busy_permille && w.cpu < rules_.fraction * mid_cpu) {
      why = h.label + " has used " + cpu_percent(w.cpu) + " CPU for " + span +
            " while the median rank used " + cpu_percent(mid_cpu);
    } else if (peers && mid_printed > 0 &&
               static_cast<double>(w.printed) < rules_.fraction * mid_printed) {
      why = h.label + " printed " + byte_rate(static_cast<double>(w.printed) / window_s) + " for " +
            span + " while the median rank printed " + byte_rate(mid_printed / window_s);
    }
    if (why.empty()) {
      h.named = false;  // recovered (or never lagged)
    } else if (!h.named) {
      h.named = true;
      found.push_back({rank, why});
    }
  }
  return found;
}

bool StragglerWatch::lagging(int rank) const {
  auto it = ranks_.find(rank);
  return it != ranks_.end() && it->second.named;
}

}  // namespace ferry
