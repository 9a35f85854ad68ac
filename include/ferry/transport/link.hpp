#pragma once
/// \file
/// A byte stream to one started ferryd, whatever carries it (pipes, an SSH exec channel).

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "ferry/common/result.hpp"
#include "ferry/hosts/host_list.hpp"

namespace ferry {

/// A bidirectional byte stream to one running ferryd. All callbacks run on the io_context
/// the link was created with. Destroying a link closes it (ferryd sees EOF on stdin and
/// kills its ranks).
class Link {
 public:
  using DataHandler = std::function<void(std::string_view bytes)>;
  /// `reason` is empty for a clean end of stream, else one line ("connection reset",
  /// "ferryd exited with status 127: sh: 1: /opt/ferryd: not found").
  using ClosedHandler = std::function<void(const std::string& reason)>;

  virtual ~Link() = default;
  /// Starts delivering ferryd's stdout bytes to `on_data`; `on_closed` runs once when the
  /// stream ends or fails. ferryd's stderr goes to DaemonCommand::on_stderr.
  virtual void start(DataHandler on_data, ClosedHandler on_closed) = 0;
  /// Queues `bytes` for ferryd's stdin; never blocks.
  virtual void send(std::string bytes) = 0;
  /// Flow control, for a reader that fell behind (the console): no on_data until
  /// resume_reading(), and ferryd's bytes wait on the way (in the kernel, or within the
  /// SSH channel's window), which holds ferryd's output and so its ranks back. Sending and
  /// keepalives go on. A read already under way may still deliver once.
  virtual void pause_reading() {}
  virtual void resume_reading() {}
  /// Closes the stream (ferryd reads EOF). Safe to call twice. No callbacks after it.
  virtual void close() = 0;
  /// The address the front end reached this host at ("10.0.0.2"); "" for a local ferryd.
  virtual std::string peer_address() const = 0;
  /// This machine's address on the connection to the host ("" for a local ferryd): what a
  /// remote rank can reach this machine at.
  virtual std::string local_address() const { return ""; }
  /// "host:port" for messages, or "localhost".
  virtual std::string describe() const = 0;
  /// Whether ferryd's output passes a relay that costs CPU per byte (sshd): then a direct
  /// output route (output_route.hpp) is worth offering.
  virtual bool relays_output() const { return false; }
};

/// How ferryd is started on a host.
struct DaemonCommand {
  std::string ferryd_path;  ///< absolute path on the target host
  /// Receives ferryd's stderr, one whole line at a time, on the io_context; empty = dropped
  /// (the last lines still go into the close reason). Per open, not per launcher: two hosts
  /// may share a name (one address, two ports) and each line belongs to one of them.
  std::function<void(const std::string& line)> on_stderr = nullptr;
};

/// Called once with a started link or a one-line reason (already prefixed "host:port: ").
using OpenHandler = std::function<void(Result<std::unique_ptr<Link>>)>;

/// Starts ferryd on hosts; each implementation owns one way of reaching them.
class Launcher {
 public:
  virtual ~Launcher() = default;
  /// Starts `cmd` on `host` asynchronously and hands back a link to it. Never blocks the
  /// io_context; many opens may be in flight at once.
  virtual void async_open(const HostEntry& host, const DaemonCommand& cmd, OpenHandler handler) = 0;
  /// Aborts every open still in flight (their handlers get an error).
  virtual void cancel_all() = 0;
};

}  // namespace ferry
