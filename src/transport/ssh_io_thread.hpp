#pragma once
/// \file
/// One thread that runs SSH sessions: its own io_context, on which every call into libssh
/// for its sessions is made (a libssh session must be used by one thread at a time; its
/// log callback and level are per thread). The front end's loop only hands it work.

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace ferry {

class SshSession;

/// Shared by the launcher and every link whose session runs here: the loop must outlive
/// its sessions. Code running on the thread never holds the last reference (the launcher
/// holds one until it has stopped the thread).
class SshIoThread : public std::enable_shared_from_this<SshIoThread> {
 public:
  /// Starts the thread. libssh's own log lines (raised by a `LogLevel` in an ssh config)
  /// made on it go to `log`, which is called on this thread; empty = dropped.
  explicit SshIoThread(std::function<void(const std::string&)> log);
  /// stop().
  ~SshIoThread();
  SshIoThread(const SshIoThread&) = delete;
  SshIoThread& operator=(const SshIoThread&) = delete;

  asio::io_context& io() { return io_; }
  /// Ends the loop, whatever its sessions are doing (a session still flushing its EOF is
  /// abandoned, as when the front end's loop stops), and joins the thread. Sessions left
  /// are destroyed with the io_context. Not on this thread.
  void stop();

  /// Sessions still opening, for cancelling them. Used on this thread only.
  std::vector<std::weak_ptr<SshSession>> opening;

 private:
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::thread thread_;
};

}  // namespace ferry
