#pragma once
/// \file
/// Which rank lags its peers: judged over a window (60 s by default) of the samples every
/// ferryd sends, against the median rank, so one slow second flags nobody. A rank is a
/// straggler when, over the whole window:
/// - its CPU use stayed below a fraction (a quarter) of the median rank's while the median
///   rank was busy (at least a fifth of a core), or
/// - it printed less than that fraction of what the median rank printed, the median having
///   printed something, or
/// - it was stopped (SIGSTOP, a debugger) or in disk sleep (D) at every sample.
/// The median is that of the ranks running now: a rank stopped or in disk sleep at the newest
/// sample is named for that, and does not pull the measure of the others down.
/// Each is named once per episode: a rank that recovers may be named again later.

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

namespace ferry {

struct StragglerRules {
  std::chrono::seconds window{60};
  double fraction = 0.25;        ///< of the median rank's CPU use or output
  uint32_t busy_permille = 200;  ///< the median rank must use this much CPU to compare CPU
};

/// One rank in one round of samples.
struct RankTick {
  int rank = 0;
  std::string label;  ///< how messages name it: "rank 13 on node4"
  char state = '?';
  uint32_t cpu_permille = 0;
  uint64_t output_bytes = 0;  ///< everything it printed so far
};

/// A rank found lagging, and the line that says so (without a "ferry: " prefix).
struct Straggler {
  int rank = 0;
  std::string why;
};

class StragglerWatch {
 public:
  using Clock = std::chrono::steady_clock;

  explicit StragglerWatch(StragglerRules rules = {}) : rules_(rules) {}

  /// Takes one round of samples (every running rank at `now`) and returns the ranks newly
  /// found lagging. A rank missing from a round has ended: its history goes.
  std::vector<Straggler> observe(Clock::time_point now, const std::vector<RankTick>& ranks);
  /// Whether `rank` is lagging now (named, not recovered since).
  bool lagging(int rank) const;
  /// Forgets every rank (a new attempt starts).
  void clear() { ranks_.clear(); }

 private:
  struct Point {
    Clock::time_point at;
    char state = '?';
    uint32_t cpu_permille = 0;
    uint64_t output_bytes = 0;
  };
  struct History {
    std::string label;
    std::deque<Point> points;
    bool named = false;
  };
  // Over the window ending at the newest point: mean CPU, bytes printed, always stopped/D.
  struct Window {
    double cpu = 0;
    uint64_t printed = 0;
    char stuck = 0;       // 'T' or 'D' when every point was; 0 otherwise
    bool paused = false;  // stopped or in disk sleep at the newest point
  };
  static Window window_of(const History& h);

  StragglerRules rules_;
  std::map<int, History> ranks_;
};

/// "3%", "97%", "150%": CPU use as top shows it (1000 permille = 100%).
std::string cpu_percent(double permille);
/// "0 B/s", "12.3 KB/s", "4.1 MB/s".
std::string byte_rate(double bytes_per_s);

}  // namespace ferry
