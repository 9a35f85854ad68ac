#pragma once
// Private to src/frontend/: the job's view as the front end keeps it. The hosts' samples, the
// ranks' starts and ends, restarts and lost hosts go into a JobTimeline (monitor/job_timeline.hpp);
// each round of samples is judged for stragglers (monitor/stragglers.hpp), named in the
// console with --stragglers; after the job the record is written as --report and --trace.
// Made only when one of those was asked for.

#include <asio.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ferry/frontend/diagnostics.hpp"
#include "ferry/frontend/job_options.hpp"
#include "ferry/monitor/gpu_use.hpp"
#include "ferry/monitor/job_timeline.hpp"
#include "ferry/monitor/output_tail.hpp"
#include "ferry/monitor/stragglers.hpp"
#include "ferry/monitor/top_view.hpp"
#include "ferry/wire/messages.hpp"
#include "host_link.hpp"

namespace ferry {

class JobWatch {
 public:
  using Clock = std::chrono::steady_clock;

  JobWatch(asio::io_context& io, const JobOptions& opts, Diagnostics& diag,
           Clock::time_point began);

  void host(size_t i, const std::string& name);
  void rank_started(int attempt, int rank, const std::string& label, size_t host);
  /// `failed`: the rank's end fails the attempt (a nonzero exit, a signal, a reason).
  void rank_ended(const HostLink& host, const wire::Exited& e, bool failed);
  /// Every rank of `host` still open ends with it.
  void host_lost(const HostLink& host, size_t i, const std::string& why);
  void mark(const std::string& kind, const std::string& text, int host = -1);
  /// One round from host `i`: into the record, and kept as the host's latest for the
  /// straggler judgment (every sample interval, over every host's latest round).
  void samples(const HostLink& host, size_t i, const wire::Samples& m,
               const std::function<std::string(int)>& label);
  /// A new attempt: the stragglers' history starts again.
  void new_attempt() { stragglers_.clear(); }
  /// The job ended with `exit_status`: writes --report and --trace (a file that cannot be
  /// written is said in one line).
  void finish(int exit_status);

  /// The live view's rows: every rank of the running attempt as last sampled, with its last
  /// line; ended ranks with their outcome.
  std::vector<TopRow> top_rows() const;
  /// The ranks' last lines (HostLink appends to it with --top).
  OutputTail& tail() { return tail_; }
  /// Seconds since the job began.
  double elapsed() const { return now(); }
  /// The view's first line: "ferry top  R of N ranks running on H hosts  T s  " + `command`.
  std::string top_title(const std::string& command) const;

 private:
  double now() const;
  void judge_later();
  void judge();
  void forget_ticks(int rank);

  asio::steady_timer timer_;

  const JobOptions& opts_;
  Diagnostics& diag_;
  Clock::time_point began_;
  JobTimeline record_;
  StragglerWatch stragglers_;
  // Each host's ranks at its latest round, the stragglers' input across hosts.
  std::map<size_t, std::vector<RankTick>> latest_;
  // The live view's rows by rank, and each rank's bytes at its previous sample (its rate).
  std::map<int, TopRow> rows_;
  std::map<int, std::pair<uint64_t, Clock::time_point>> printed_;
  OutputTail tail_;
  bool finished_ = false;
};

}  // namespace ferry
