#pragma once
/// \file
/// Starts ferryd inside a Slurm allocation with srun, as Open MPI's plm_slurm and hydra's
/// slurm launcher start their daemons: the hosts opened in one loop turn get ONE step,
/// `srun --nodes=N --ntasks=N --ntasks-per-node=1 --nodelist=... ferryd --connect`, and every
/// ferryd connects back to ferryrun over TCP, proving it holds the job's secret (see
/// connect_back.hpp). The secret, port and addresses travel in srun's environment, never on
/// a command line. The rest of ferry sees Links, as with SSH.

#include <asio.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ferry/transport/link.hpp"

namespace ferry {

struct SlurmOptions {
  std::string srun = "srun";  ///< the srun to run (PATH lookup)
  bool verbose = false;
  /// The job goes on without a lost host (--min-hosts, --min-np, --max-restarts): the step
  /// runs with `--kill-on-bad-exit=0 --no-kill`, so one ferryd failing (or its node) does not
  /// make Slurm end the others. Otherwise `--kill-on-bad-exit`, as Open MPI's plm_slurm.
  bool survive_lost_host = false;
  /// One line for the user (srun's stderr, --verbose notes).
  std::function<void(const std::string&)> log;
};

class SlurmLauncher : public Launcher {
 public:
  SlurmLauncher(asio::io_context& io, SlurmOptions opts);
  ~SlurmLauncher() override;
  SlurmLauncher(const SlurmLauncher&) = delete;
  SlurmLauncher& operator=(const SlurmLauncher&) = delete;
  void async_open(const HostEntry& host, const DaemonCommand& cmd, OpenHandler handler) override;
  void cancel_all() override;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ferry
