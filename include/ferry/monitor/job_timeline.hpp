#pragma once
/// \file
/// What a job did, kept for `--report` and `--trace`: every rank's life (start, first output,
/// end; one track per rank and attempt), what its ferryd sampled of it (CPU and memory over
/// time, its cores and devices), each host's NUMA layout, and the job's marks (restarts, lost
/// hosts, failures, stragglers). Times are seconds since the job began. Each series keeps at
/// most kMaxPoints points: past that, neighbours are merged, so a long job's record stays
/// small (a few KB per rank).

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ferry {

/// One value of a series at `t` seconds.
struct SeriesPoint {
  float t = 0;
  float v = 0;
};

/// A series that halves its resolution when full.
class Series {
 public:
  static constexpr size_t kMaxPoints = 512;
  void add(double t, double v);
  const std::vector<SeriesPoint>& points() const { return points_; }

 private:
  std::vector<SeriesPoint> points_;
  size_t merge_ = 1;    // raw samples per kept point
  size_t pending_ = 0;  // raw samples in the last point so far
};

/// One rank in one attempt.
struct RankTrack {
  int rank = 0;
  std::string label;  ///< "3", "spawn1:0"
  size_t host = 0;    ///< index in JobTimeline::hosts
  int attempt = 0;
  double start = 0;
  double first_output = -1;  ///< -1: it printed nothing
  double end = -1;           ///< -1: still running when the record was written
  std::string outcome;       ///< "exit 0", "exit 3", "SIGKILL", "lost with its host", ...
  bool failed = false;
  std::string cpus;     ///< allowed CPUs as ferryd read them ("0-3"), "" unknown
  std::string devices;  ///< "CUDA_VISIBLE_DEVICES=1", "" none
  uint32_t wall_ms = 0, cpu_ms = 0, max_rss_kb = 0;  ///< from its exit, 0 unknown
  Series cpu;                                        ///< percent of one core
  Series rss;                                        ///< MiB
  std::vector<std::pair<double, double>> lagging;    ///< straggler spans [from, to]; to -1 open
};

struct HostTrack {
  std::string name;
  std::vector<std::string> numa;        ///< each NUMA node's CPUs ("0-15"), in node order
  std::string accelerators;             ///< what ferryd could read of them, in a line
  Series cpu;                           ///< its ranks' CPU summed, percent of one core
  Series rss;                           ///< its ranks' memory summed, MiB
  std::map<uint32_t, Series> gpu_util;  ///< each GPU's use by its index, percent
};

/// Something that happened to the job as a whole or to one host or rank.
struct JobMark {
  double t = 0;
  std::string kind;  ///< "restart", "new attempt", "host lost", "failure", "straggler"
  std::string text;
  int host = -1;  ///< index in hosts, -1 none
};

/// A rank's sample as the record takes it.
struct RankPoint {
  int rank = 0;
  double cpu_percent = 0;
  double rss_mib = 0;
  std::string cpus, devices;  ///< "" unchanged
};

class JobTimeline {
 public:
  /// The job's command and when it began (wall clock, for the report's title).
  void begin(std::string command, std::string started_at);
  /// Host `i` of the job (hosts in placement order) is `name`; the hosts before it that were
  /// not named yet are added unnamed.
  void set_host(size_t i, const std::string& name);
  void host_layout(size_t host, std::vector<std::string> numa, std::string accelerators);

  void rank_started(int attempt, int rank, std::string label, size_t host, double t);
  void rank_output(int rank, double t);
  void rank_ended(int rank, double t, std::string outcome, bool failed, uint32_t wall_ms,
                  uint32_t cpu_ms, uint32_t max_rss_kb);
  /// One round of `host`'s samples at `t`.
  void sample(size_t host, double t, const std::vector<RankPoint>& ranks);
  /// `host`'s GPUs at `t`: (index, use in percent) each.
  void gpu_sample(size_t host, double t, const std::vector<std::pair<uint32_t, double>>& gpus);
  void lagging(int rank, double t, bool on);
  void mark(double t, std::string kind, std::string text, int host = -1);
  /// The job ended at `t` with `exit_status`; ranks still open end there.
  void finish(double t, int exit_status);

  const std::string& command() const { return command_; }
  const std::string& started_at() const { return started_at_; }
  const std::vector<HostTrack>& hosts() const { return hosts_; }
  const std::vector<RankTrack>& ranks() const { return ranks_; }
  const std::vector<JobMark>& marks() const { return marks_; }
  double end() const { return end_; }
  int exit_status() const { return exit_status_; }

 private:
  RankTrack* current(int rank);

  std::string command_, started_at_;
  std::vector<HostTrack> hosts_;
  std::vector<RankTrack> ranks_;
  std::vector<JobMark> marks_;
  double end_ = 0;
  int exit_status_ = -1;
};

/// The record as a Chrome trace (JSON, the trace event format Perfetto and chrome://tracing
/// open): a process per host, a thread per rank, a slice per rank's life, instants for first
/// output and the job's marks, counters for CPU and memory.
std::string trace_json(const JobTimeline& record);

/// The record as one self-contained HTML page (no script, no network): the timeline, CPU
/// and memory per host and per rank, the binding map and the exit table.
std::string report_html(const JobTimeline& record);

}  // namespace ferry
