#pragma once
/// \file
/// Starting, signalling and reaping child processes behind one small interface, so that
/// what runs ranks (ferryd) can run against a fake in tests.

#include <sys/types.h>

#include <asio.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "ferry/common/result.hpp"
#include "ferry/process/spawn.hpp"

namespace ferry {

/// A child that ended: its pid and its wait(2) status (WIFEXITED, WTERMSIG, ...).
struct ChildExit {
  pid_t pid = -1;
  int status = 0;
  uint64_t cpu_us = 0;      ///< user + system CPU time of the child and its reaped children
  uint64_t max_rss_kb = 0;  ///< its peak resident set (wait4's ru_maxrss)
};

/// Starts child processes, each the leader of its own process group, and learns how they
/// ended.
class ProcessSpawner {
 public:
  virtual ~ProcessSpawner() = default;
  /// Starts `req` (see spawn_process()). The pid is also the child's process group.
  virtual Result<pid_t> spawn(const SpawnRequest& req) = 0;
  /// Sends `signo` to the process group `pgid`: the child and whatever it forked there.
  virtual void signal_group(pid_t pgid, int signo) = 0;
  /// From now on calls `changed` on `io` whenever a child may have ended; the owner then
  /// calls reap() until it returns nothing. Called once.
  virtual void watch(asio::io_context& io, std::function<void()> changed) = 0;
  /// A child that ended, without waiting; nullopt when none has (yet).
  virtual std::optional<ChildExit> reap() = 0;
};

/// The real thing: spawn_process(), kill(2) and waitpid(2), with SIGCHLD as the news.
/// reap() collects any child of this process, not only the ones it started: the owner
/// ignores pids it does not know (a forked helper, an exec that failed).
class SystemSpawner final : public ProcessSpawner {
 public:
  SystemSpawner();
  ~SystemSpawner() override;
  SystemSpawner(const SystemSpawner&) = delete;
  SystemSpawner& operator=(const SystemSpawner&) = delete;
  Result<pid_t> spawn(const SpawnRequest& req) override;
  void signal_group(pid_t pgid, int signo) override;
  void watch(asio::io_context& io, std::function<void()> changed) override;
  std::optional<ChildExit> reap() override;

 private:
  void wait_signal();

  std::unique_ptr<asio::signal_set> sigchld_;
  std::function<void()> changed_;
};

}  // namespace ferry
