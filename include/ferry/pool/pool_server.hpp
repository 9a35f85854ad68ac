#pragma once
/// \file
/// The warm pool's process on this machine (`ferry up`): one SSH connection per host, each
/// carrying a `ferryd --pool` (host_side.hpp), and a control socket through which jobs get a
/// ferryd on a host without an SSH handshake, a login shell or a ferryd start of their own.
///
/// The control socket (`pool.sock`, 0600 in the pool's 0700 directory; a peer of another uid
/// is refused by SO_PEERCRED as well) takes one request line a connection:
/// - `open KEY LABEL`: a ferryd for one job on host KEY. Answer `ok PEER LOCAL DESCRIBE HOW`
///   (HOW: `warm`, or `repaired` when the host's pool ferryd had to be started again) and
///   from then on the connection is that ferryd's stream: what the job writes is ferryd's
///   stdin; what comes back is mux frames on stream 0 (kData: its stdout, kStderr, kClose
///   with the reason it ended). Or `no WHY` (a host the pool lacks, or one it cannot reach
///   now): the job reaches that host as it would without a pool.
/// - `hosts`: one line per host, `KEY up|down|starting DESCRIBE [WHY]`, then `end`.
/// - `jobs`: the streams open now, `KEY LABEL`, then `end`.
/// - `down`: `ok`, and the pool ends (every host's ferryds with it).
/// A job's stream ends when either side closes it; the pool closes it when the host's
/// connection ends. The pool ends itself after `idle` with no stream open.

#include <asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ferry/common/result.hpp"
#include "ferry/hosts/host_list.hpp"
#include "ferry/transport/ssh_launcher.hpp"

namespace ferry {

struct PoolOptions {
  std::string name;
  std::string dir;  ///< this pool's directory, private, made by the caller
  HostList hosts;
  SshOptions ssh;           ///< how hosts are reached (ferryd_mode and ship are set here)
  std::string ferryd_path;  ///< ferryd on hosts whose entry names none
  std::chrono::seconds idle{1800};
  /// Runs once when the pool ends (asked, idle, or no host up): the caller's own waits on the
  /// loop (signals) end there, so that the loop runs out.
  std::function<void()> on_stop;
  /// Lines for the pool's log (its directory's pool.log); empty = none.
  std::function<void(const std::string&)> log;
};

class PoolServer {
 public:
  /// One line per host once each is up or failed (`KEY up DESCRIBE` / `KEY failed WHY`), and
  /// how many are up.
  using Ready = std::function<void(const std::vector<std::string>& lines, int up)>;

  PoolServer(asio::io_context& io, PoolOptions options);
  ~PoolServer();
  PoolServer(const PoolServer&) = delete;
  PoolServer& operator=(const PoolServer&) = delete;

  /// Binds the control socket and reaches every host; `ready` runs once on the loop. Error:
  /// the socket cannot be bound (one line).
  Status start(Ready ready);
  /// Ends the pool: every stream and host connection closed, the socket removed; the loop's
  /// work ends.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ferry
