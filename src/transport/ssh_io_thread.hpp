#pragma once
/// \file
/// Where SSH sessions run: an I/O thread with an io_context of its own, or the front end's
/// loop itself. Every call into libssh for a session is made there (a libssh session must
/// be used by one thread at a time; its log callback and level are per thread).

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace ferry {

class SshSession;

/// Shared by the launcher and every link whose session runs here: the io_context must
/// outlive its sessions. Code running on an I/O thread never holds the last reference
/// (the launcher holds one until it has stopped the thread).
class SshIoThread : public std::enable_shared_from_this<SshIoThread> {
 public:
  /// libssh's own log lines (raised by a `LogLevel` in an ssh config) made where the
  /// sessions run go to `log`, called there; empty = dropped.
  using Log = std::function<void(const std::string&)>;

  /// Starts a thread with an io_context of its own.
  explicit SshIoThread(Log log);
  /// Sessions run on `loop`, the caller's: no thread (the caller's thread gets the log).
  SshIoThread(asio::io_context& loop, Log log);
  /// stop().
  ~SshIoThread();
  SshIoThread(const SshIoThread&) = delete;
  SshIoThread& operator=(const SshIoThread&) = delete;

  asio::io_context& io() { return own_ ? *own_ : *loop_; }
  /// True when the sessions run on the caller's loop (no thread of their own).
  bool on_loop() const { return !own_; }
  /// With a thread: ends its loop, whatever its sessions are doing (a session still
  /// flushing its EOF is abandoned, as when the front end's loop stops), and joins it;
  /// sessions left are destroyed with the io_context. Not on that thread. On the caller's
  /// loop: opens still in flight end without calling their handlers.
  void stop();
  /// stop() was called: no new session may start here.
  bool stopped() const { return stopped_.load(std::memory_order_acquire); }

  /// Sessions still opening, for cancelling them. Used where the sessions run only.
  std::vector<std::weak_ptr<SshSession>> opening;

  /// Buffers for the batches of output this thread's sessions hand to the loop, which
  /// gives each back once it took the bytes: a few per thread, however many sessions run
  /// here, so that steady streaming allocates nothing and idle sessions hold none. From
  /// any thread; take_spare() gives an empty string when none is left.
  std::string take_spare();
  void give_spare(std::string buffer);

 private:
  std::mutex spare_mu_;
  std::vector<std::string> spares_;
  std::unique_ptr<asio::io_context> own_;  // null on the caller's loop
  asio::io_context* loop_ = nullptr;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::thread thread_;
  std::atomic<bool> stopped_{false};
};

}  // namespace ferry
