#pragma once
/// \file
/// How a pool host's `ferryd --pool` gets a ferryd for each job: it asks its fork server
/// (fork_server.hpp), exec'd once, and execs `ferryd --stdio` itself only while there is no
/// fork server (it could not start, or it died). One ferryd is kept started ahead of the next
/// job (the spare), so that its start and greeting are off that job's path.

#include <sys/types.h>

#include <asio/io_context.hpp>
#include <asio/posix/stream_descriptor.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>

#include "ferry/common/posix_handles.hpp"
#include "ferry/common/result.hpp"

namespace ferry {

struct ForkServerEvent;

/// A ferryd --stdio started, not yet a job's: its socket (stdin and stdout) and the read end of
/// its stderr's pipe.
struct StartedFerryd {
  pid_t pid = -1;           ///< -1 while the fork server's answer is awaited (then `token`)
  std::uint64_t token = 0;  ///< the fork server's request whose answer names the pid
  bool forked = false;      ///< by the fork server, whose end is its end too
  UniqueFd sock, err;
  std::chrono::steady_clock::time_point born;
};

class FerrydStarter {
 public:
  /// What the fork server said of a ferryd already handed out by take().
  struct Events {
    std::function<void(std::uint64_t token, pid_t pid)> forked;
    std::function<void(std::uint64_t token, const std::string& why)> failed;
    std::function<void(pid_t pid, int status)> exited;  ///< as waitpid gives it
  };

  /// `exe`: what the fork server and exec'd ferryds run as their argv[0] (the file is always
  /// this process's own, /proc/self/exe: every job's ferryd speaks the pool's version).
  FerrydStarter(asio::io_context& io, std::string exe, Events events);

  /// Starts the fork server (if it can) and the first spare.
  void start();
  /// The spare, or a ferryd started now. Error: one line, why none could start.
  Result<StartedFerryd> take();
  /// Starts a spare if there is none (when a job's stream ends, not when one begins: the
  /// spare's start would compete with the job's ranks for the host's CPUs).
  void refill();
  /// `pid` (reaped by the caller) was the unused spare: dropped. False: not the spare.
  bool spare_ended(pid_t pid);
  /// The fork server's pid (its end shows on its socket, not as a child to report), or -1.
  pid_t server_pid() const { return server_pid_; }
  /// No spare, no fork server (it reads the end and exits), nothing started from now on.
  void stop();

 private:
  void start_fork_server();
  void read_server();
  void server_lost();
  void on_server_event(const ForkServerEvent& e);
  Result<StartedFerryd> start_ferryd();
  void make_spare();
  void drop_spare();

  asio::io_context& io_;
  std::string exe_;
  Events events_;
  bool stopped_ = false;
  std::optional<StartedFerryd> spare_;
  asio::steady_timer spare_timer_;
  std::optional<asio::posix::stream_descriptor> server_;  // the fork server's control socket
  pid_t server_pid_ = -1;
  std::deque<std::uint64_t> awaiting_;  // requests whose answer is due, in order
  std::uint64_t next_token_ = 0;
};

}  // namespace ferry
