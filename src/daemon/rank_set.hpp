#pragma once
// ferryd's ranks from the HostSpec to their reported exit: which are running, how each
// ended (reaping), the drain of its output after it ended, and stopping them (signals, the
// SIGTERM → SIGKILL grace).

#include <sys/types.h>

#include <asio.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "ferry/daemon/pmi_proxy.hpp"
#include "ferry/process/spawner.hpp"
#include "ferry/wire/messages.hpp"
#include "rank_output.hpp"

namespace ferry {

/// One local rank.
struct Rank {
  enum class State {
    kPending,   // in the HostSpec, not started yet
    kRunning,   // started, not reaped
    kReaped,    // ended; its output (or PMI socket) may still be open
    kReported,  // its Exited was sent (or it never started)
  };

  /// `ended` runs whenever one of its output pipes closed.
  Rank(OutputChannel& channel, asio::io_context& io, int32_t global_rank, size_t index,
       const std::function<void()>& ended);

  const int32_t rank;
  const size_t local;  ///< index in HostSpec::ranks
  State state = State::kPending;
  pid_t pid = -1;                                    ///< also its process group
  int status = 0;                                    ///< wait status once reaped
  std::chrono::steady_clock::time_point started_at;  ///< when it was forked
  std::chrono::steady_clock::duration wall{};        ///< from fork to reaping
  uint64_t cpu_us = 0;                               ///< once reaped (wait4)
  uint64_t max_rss_kb = 0;
  RankStream out, err;
  asio::steady_timer drain;  ///< how long its output may stay open after it ended
  asio::steady_timer kill;   ///< stopped on its own (stop()): SIGKILL after the grace
};

class RankSet {
 public:
  /// `reported` runs once per rank, with the Exited to send, when its exit is final.
  using Reported = std::function<void(const Rank&, const wire::Exited&)>;

  RankSet(asio::io_context& io, ProcessSpawner& spawner, OutputChannel& channel, Reported reported);
  RankSet(const RankSet&) = delete;
  RankSet& operator=(const RankSet&) = delete;
  ~RankSet() = default;

  /// Each rank's PMI socket, if PMI is on: an exit is reported once it closed too.
  void use_pmi(PmiProxy* pmi) { pmi_ = pmi; }

  /// Adds the pending rank `rank`, entry `local` of the HostSpec.
  Rank& add(int32_t rank, size_t local);
  /// The pending rank started as `pid`: its output pipes are read from now on.
  void started(Rank& r, pid_t pid, UniqueFd out, UniqueFd err);
  /// The pending rank will not run: its exit is reported now as `code` or `signal`.
  void not_started(Rank& r, int code, int signal);
  /// Collects ended children (call whenever the spawner says some may have ended).
  void reap();
  /// PMI closed `rank`'s socket: its exit may now be reported.
  void pmi_closed(int32_t rank);

  /// Sends `signo` to every running rank's process group.
  void signal_all(int signo);
  /// SIGTERM to every running rank, SIGKILL after `grace` (0: SIGKILL now). A later call
  /// can only shorten the grace to 0.
  void terminate(std::chrono::milliseconds grace);
  /// Whether terminate() was called: pending ranks must not start.
  bool terminating() const { return terminating_; }
  /// Stops one rank while the others go on: SIGTERM to its group, SIGKILL after `grace` (0:
  /// SIGKILL now). A pending rank never starts: its exit is reported now, as SIGKILL.
  void stop(Rank& r, std::chrono::milliseconds grace);
  /// stop() for each of `ranks` this host has.
  void stop(const std::vector<int32_t>& ranks, std::chrono::milliseconds grace);

  /// The rank `rank` of this attempt, or null.
  Rank* find(int32_t rank);
  /// The running rank that `pid` is or descends from (its parents, read from /proc), or null.
  Rank* find_process(pid_t pid);
  /// Every rank, in HostSpec order.
  const std::vector<std::unique_ptr<Rank>>& ranks() const { return ranks_; }
  /// Whether every rank's exit was reported.
  bool all_reported() const;
  /// The pids of the ranks that started.
  std::vector<pid_t> started_pids() const;
  /// (global rank, pid) of each running rank, for the state report.
  std::vector<std::pair<int32_t, pid_t>> running() const;
  /// Each running rank with its pid and the time it was forked, for the job's samples.
  struct Running {
    int32_t rank = 0;
    pid_t pid = -1;
    std::chrono::steady_clock::time_point started;
  };
  std::vector<Running> running_since() const;
  /// The process groups of the running ranks.
  std::vector<pid_t> running_pgids() const;
  /// Stops every timer (the job is over on this host).
  void cancel_timers();
  /// Every rank was reported: forgets them, for the next attempt's ranks. (They are kept
  /// aside, not destroyed: their streams' last handlers may still be queued.)
  void clear();

 private:
  void ended(Rank& r);
  void maybe_report(Rank& r);
  void arm_drain(Rank& r);
  bool holds_open(const Rank& r) const;
  void report(Rank& r, const wire::Exited& e);

  asio::io_context& io_;
  ProcessSpawner& spawner_;
  OutputChannel& channel_;
  Reported reported_;
  PmiProxy* pmi_ = nullptr;
  std::vector<std::unique_ptr<Rank>> ranks_;
  std::vector<std::unique_ptr<Rank>> retired_;  // earlier attempts' ranks
  unsigned generation_ = 0;                     // attempts cleared so far
  std::map<pid_t, Rank*> by_pid_;
  asio::steady_timer kill_timer_;
  bool terminating_ = false;
};

}  // namespace ferry
