#pragma once
/// \file
/// The job summary (--summary): what each rank (or host) used and how it ended, as a table
/// printed after the job.

#include <cstdint>
#include <string>
#include <vector>

namespace ferry {

/// One rank's line of the summary.
struct RankUsage {
  int rank = 0;
  std::string host;
  std::string spawned;    ///< a process MPI_Comm_spawn started: its name ("spawn1:0"); "" a rank
  bool reported = false;  ///< an exit came for it (else it was lost or never started)
  int exit_code = 0;
  int signal = 0;
  bool aborted = false;  ///< it called MPI_Abort (its exit is then ferry's SIGTERM, or its own)
  int abort_code = 0;    ///< the code it gave MPI_Abort
  uint64_t wall_us = 0;
  uint64_t cpu_us = 0;
  uint64_t max_rss_kb = 0;
};

/// Collects the ranks' exits of the last attempt and formats them.
class JobSummary {
 public:
  /// A new attempt: `hosts[r]` is rank r's host; earlier exits are forgotten.
  void begin(const std::vector<std::string>& hosts);
  /// Rank `rank` ended (ranks outside the attempt are ignored).
  void exited(int rank, int exit_code, int signal, uint64_t wall_us, uint64_t cpu_us,
              uint64_t max_rss_kb);
  /// The job's process `id` (numbered after the ranks, in order) is one MPI_Comm_spawn
  /// started on `host`, named `name` ("spawn1:0"); its exit is reported as a rank's.
  void spawned(int id, const std::string& host, const std::string& name);
  /// Rank `rank` called MPI_Abort with `code`: its exit reads "MPI_Abort <code>", whatever
  /// ended it after (the SIGTERM that ends an aborted job's ranks, or its own exit).
  void aborted(int rank, int code);
  /// The table, each line ending in '\n', the first a heading naming `program`. `per_rank`:
  /// one line per rank; otherwise one per host (its ranks, the longest wall time, the CPU
  /// time summed, the largest peak RSS, and the exits that were not 0). Spawned processes
  /// count with their host, under their names.
  std::string format(const std::string& program, bool per_rank) const;
  /// True when no rank was recorded (no attempt began).
  bool empty() const { return ranks_.empty(); }
  /// Whether any rank's end was reported (false when the job never started).
  bool any_reported() const;

 private:
  std::vector<RankUsage> ranks_;
};

/// "12.3 s", "2 min 03 s", "1 h 02 min".
std::string format_duration_us(uint64_t us);
/// "312 MiB", "1.5 GiB" (from KiB).
std::string format_kib(uint64_t kib);

}  // namespace ferry
