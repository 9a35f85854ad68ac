#pragma once
/// \file
/// The front end's job controller: places ranks, starts one ferryd per host (all hosts in
/// parallel), sends each its HostSpec, prints output, applies the abort policy, forwards
/// signals, and turns the ranks' ends into ferryrun's exit status.

#include <asio.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ferry/frontend/diagnostics.hpp"
#include "ferry/frontend/job_options.hpp"
#include "ferry/hosts/host_list.hpp"
#include "ferry/output/sink.hpp"
#include "ferry/plan/placement.hpp"
#include "ferry/transport/link.hpp"

namespace ferry {

/// Which launcher reaches a host.
struct Launchers {
  Launcher& local;
  Launcher& remote;
};

/// Runs one job on an io_context.
class Job {
 public:
  /// `placed`: the ranks as ferryrun placed them from `opts` before the job (it checks them
  /// first, and the console needs them); without it the job places them itself.
  Job(asio::io_context& io, JobOptions opts, Launchers launchers, OutputSink& out,
      Diagnostics& diag, std::optional<Placement> placed = std::nullopt);
  ~Job();
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  /// Runs the job to its end (drives the io_context) and returns ferryrun's exit status:
  /// 0, the first failing rank's code (128+signal when killed), 128+signal when ferryrun
  /// was interrupted, 255 when a host was lost, 1 when the job could not start, or 2 for
  /// a placement error.
  int run();

 private:
  class Impl;  // NOLINT(cppcoreguidelines-virtual-class-destructor): final, see job_impl.hpp
  std::unique_ptr<Impl> impl_;
};

}  // namespace ferry
