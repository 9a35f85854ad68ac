#pragma once
/// \file
/// Starts ferryd on remote hosts over SSH (libssh): one non-blocking session per host,
/// honouring ~/.ssh/config, ssh-agent, default keys and known_hosts. The sessions may run
/// on a few I/O threads of their own (key exchange, decryption and libssh's copies of
/// every byte, hosts in parallel; `SshOptions::io_threads`); links and every handler are
/// used on the caller's io_context either way.

#include <asio/io_context.hpp>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ferry/transport/ferryd_shipment.hpp"
#include "ferry/transport/link.hpp"

namespace ferry {

class InFlightBudget;
class SshIoThread;

/// How SSH connections are made; the command-line side of `ssh`'s options.
struct SshOptions {
  /// ssh_config file to read; "" = ~/.ssh/config then /etc/ssh/ssh_config (like `ssh -F`).
  std::string config_file;
  /// Private key tried first (like `ssh -i`), before the agent and the default keys.
  std::string identity_file;
  /// Port for hosts whose entry gives none; like `ssh -p` it beats the ssh config's `Port`.
  /// 0 = ssh config or 22.
  int default_port = 0;
  /// Login user for hosts whose entry gives none; like `ssh -l` it beats the config's
  /// `User`. "" = ssh config, else the current user.
  std::string default_user;
  /// Record unknown host keys in known_hosts instead of refusing them. Changed keys are
  /// always refused. `StrictHostKeyChecking accept-new|no` in the ssh config does the same.
  bool accept_new_host_keys = false;
  /// Limit for TCP connect + key exchange + authentication + starting ferryd, in seconds.
  int connect_timeout_s = 30;
  /// When > 0, a keepalive request is sent every this many seconds once a link is
  /// started; a link that hears nothing for 3 intervals is closed.
  int keepalive_s = 0;
  /// Sends progress lines ("h1:22: authenticated as root") to `log`.
  bool verbose = false;
  /// Receives verbose lines, on the launcher's io_context; empty = none.
  std::function<void(const std::string& line)> log;
  /// Threads the sessions run on, each with its own event loop; hosts are dealt to them in
  /// turn, and a thread starts with the first host it gets. -1 = none: the sessions run on
  /// the launcher's io_context; 0 = none on machines with fewer than 4 CPUs, else one per
  /// CPU, at most 8.
  int io_threads = 0;
  /// With I/O threads: the most bytes of ferryd's output on their way from the threads to
  /// the loop, all hosts together (each host at most 1 MiB). What a console that fell
  /// behind still gets after ferryrun stopped reading the hosts is bounded by it. The loop
  /// is their one reader: 8 MiB is some 30 ms of its work at the rates it reaches.
  std::size_t all_in_flight = std::size_t{8} << 20;
  /// Shipping ferryd (--ship-ferryd): unless null or kNever, each host first runs
  /// ship_command() on its session, which names the ferryd to start or receives this
  /// plan's file for its architecture.
  std::shared_ptr<const ShipPlan> ship;
  /// How ferryd is started: `--stdio` serves one job; a warm pool starts `--pool` (then with
  /// no shipping: `ship` must be null).
  std::string ferryd_mode = "--stdio";
};

/// A Launcher that reaches hosts over SSH. The command run is
/// `'<ferryd path>' --stdio`, where the path is `HostEntry::ferryd` when set, else
/// `DaemonCommand::ferryd_path`, or the cached copy that shipping chose (SshOptions::ship); its
/// stderr lines go to `DaemonCommand::on_stderr`. Errors are one line prefixed "host:port: ".
class SshLauncher : public Launcher {
 public:
  /// `io` must outlive the launcher and every link it hands out.
  SshLauncher(asio::io_context& io, SshOptions options);
  /// Stops the I/O threads: opens still in flight end without calling their handlers,
  /// links still open stop carrying bytes (ferryd sees its connection end).
  ~SshLauncher() override;
  SshLauncher(const SshLauncher&) = delete;
  SshLauncher& operator=(const SshLauncher&) = delete;

  /// Connects, checks the host key, authenticates and starts ferryd; `handler` runs once on
  /// the io_context (never inside this call).
  void async_open(const HostEntry& host, const DaemonCommand& cmd, OpenHandler handler) override;
  /// Every open still in flight fails with "host:port: cancelled" (an open that finished
  /// meanwhile may still succeed: its handler was already on its way).
  void cancel_all() override;

 private:
  SshIoThread& next_thread();

  asio::io_context& io_;
  SshOptions options_;
  std::vector<std::shared_ptr<SshIoThread>> threads_;
  std::shared_ptr<InFlightBudget> budget_;  // the links' on I/O threads
  size_t next_ = 0;
};

/// Quotes `word` for a POSIX shell ('...' with embedded quotes escaped).
std::string shell_quote(const std::string& word);

}  // namespace ferry
