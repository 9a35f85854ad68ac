#pragma once
/// \file
/// One SSH connection to one host, carrying one ferryd: the libssh options
/// (ssh_session_config.cpp), the non-blocking open sequence (ssh_session_open.cpp) and the
/// byte stream over the exec channel (ssh_session_stream.cpp), all driven by the libssh fd
/// watched with asio (ssh_session.cpp). A session lives on its SshIoThread's io_context
/// (an I/O thread's or the front end's loop, ssh_io_thread.hpp) and is only ever used
/// there; SshLink carries its bytes and calls to and from the front end's loop.

#include <libssh/callbacks.h>
#include <libssh/libssh.h>

#include <asio/io_context.hpp>
#include <asio/posix/stream_descriptor.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "ferry/transport/link.hpp"
#include "ferry/transport/ssh_launcher.hpp"
#include "ssh_handles.hpp"

namespace ferry {

/// Shared because pending asio waits keep it alive after its Link is gone, long enough to
/// flush what was sent and the EOF that tells ferryd to stop.
class SshSession : public std::enable_shared_from_this<SshSession> {
 public:
  using OpenDone = std::function<void(Status)>;
  /// Receives ferryd's stdout, a batch at a time; it may take the batch by swapping it out
  /// for a buffer of its own (empty; its capacity is reused for the next batch).
  using BatchHandler = std::function<void(std::string& bytes)>;

  /// `ferryd_path` is the remote path; the command run is `'<path>' --stdio`. `on_stderr`
  /// gets ferryd's stderr lines (may be empty).
  SshSession(asio::io_context& io, SshOptions options, HostEntry host, std::string ferryd_path,
             std::function<void(const std::string&)> on_stderr);
  ~SshSession();
  SshSession(const SshSession&) = delete;
  SshSession& operator=(const SshSession&) = delete;

  /// Connects, checks the host key, authenticates and starts ferryd. `done` is posted once
  /// with ok or a one-line error prefixed "host:port: ".
  void open(OpenDone done);
  /// Fails an open still in flight with `reason`; with `notify` false its handler is
  /// dropped instead of called. No effect once the open finished.
  void abort_open(const std::string& reason, bool notify);

  /// Link::start: begins reading ferryd's output.
  void start(BatchHandler on_data, Link::ClosedHandler on_closed);
  /// Link::send: queues bytes for ferryd's stdin.
  void send(std::string bytes);
  /// Link::pause_reading / resume_reading. Paused, ferryd's stdout is left in libssh's
  /// channel buffer, whose window then closes, while packets (keepalive replies, window
  /// adjusts, ferryd's stderr) are still processed.
  void pause_reading(bool paused);
  /// Link::close: no callbacks afterwards; flushes queued bytes and EOF in the background
  /// (at most 5 s), then disconnects.
  void close();
  /// Numeric address of the peer ("127.0.0.1"), known once connected.
  const std::string& peer_address() const { return peer_; }
  /// This machine's address on the connection (what the host can reach us at).
  const std::string& local_address() const { return local_; }
  /// "host:port" ("[v6]:port" for IPv6 literals).
  std::string describe() const;

 private:
  enum class Phase {
    kConnect,
    kHostKey,
    kAuthIdentity,
    kAuthAuto,
    kChannel,
    kExec,          // opening
    kTryInstalled,  // the installed ferryd started, its greeting awaited (ssh_session_ship.cpp)
    kShipTalk,      // shipping ferryd (ssh_session_ship.cpp), when SshOptions::ship asks
    kReady,         // exec accepted, start() not called yet: the fd is not read
    kStreaming,     // start() called
    kLinger,        // close() called, flushing
    kDone,
  };
  enum class Step { kNext, kAgain, kStop };

  // ssh_session_config.cpp
  Status configure();

  // ssh_session_open.cpp
  void run_open();
  Step connect_step();
  Step host_key_step();
  Step auth_identity_step();
  Step auth_auto_step();
  Step channel_step();
  Step exec_step();
  /// Whether the channel runs ship_command() (which ends by starting ferryd) instead of
  /// ferryd itself.
  bool shipping() const;
  /// Whether the channel starts the installed ferryd first, to know it by its greeting
  /// (`auto` with ShipPlan::greeting, and not tried yet).
  bool trying_installed() const;

  // ssh_session_ship.cpp
  Step try_installed_step();
  /// Drops the channel of an installed ferryd that will not do and opens another for
  /// ship_command(); `why` goes to the verbose log.
  Step after_installed(const std::string& why);
  /// Reads what the channel has into rx_out_/rx_err_; false when the connection failed (the
  /// open was failed too).
  bool read_while_opening();
  Step ship_talk_step();
  bool ship_write();
  Step ship_answer(const ShipLine& line);
  void fail_open(const std::string& message);
  void finish_open(Status status);
  bool opening() const { return phase_ < Phase::kReady; }

  // ssh_session_stream.cpp
  void pump();
  bool process_packets();
  bool drain_channel(bool deliver);
  bool take_held_back(bool deliver);
  bool deliver_rx(bool deliver);
  void flush_sends();
  void take_stderr(std::string_view bytes);
  void conclude();
  void finish_stream(const std::string& reason);
  void linger_step();
  void schedule_keepalive();
  void on_keepalive();
  void post_pump();
  bool hold_reads();

  // ssh_session.cpp
  void arm();
  void ack_now();
  void on_io();
  void sync_fd();
  /// Writes what libssh holds for the socket, as far as it takes it; true when bytes are
  /// left (socket_reads is told, so its poll() then asks the kernel about writing).
  bool writes_queued();
  void teardown();
  void log(const std::string& line) const;
  std::string error_text() const;

  // ssh_session_stream.cpp: libssh's channel callbacks
  static void on_exit_status(ssh_session, ssh_channel, int status, void* self);
  /// Takes every channel data packet as libssh processes it, whichever call made libssh
  /// read the socket, so no data ever waits inside libssh where no fd readiness would
  /// announce it (asio's waits are edge-triggered).
  static int on_channel_data(ssh_session, ssh_channel, void* data, uint32_t len, int is_stderr,
                             void* self);
  static void on_exit_signal(ssh_session, ssh_channel, const char* signal, int core,
                             const char* errmsg, const char* lang, void* self);
  /// sshd closed the channel (ferryd is gone). While stdout waits in libssh's buffer (paused),
  /// libssh keeps the channel "open" with a delayed close: ssh_channel_is_closed() says no,
  /// yet every write fails with "Remote channel is closed".
  static void on_channel_close(ssh_session, ssh_channel, void* self);

  asio::io_context& io_;
  SshOptions options_;
  HostEntry host_;
  std::string ferryd_path_;
  std::function<void(const std::string&)> on_stderr_;
  std::string command_;

  // Effective settings, read back from libssh after the config was applied.
  int port_ = 22;
  std::string target_host_;  // after HostName
  std::string user_;
  bool accept_new_ = false;
  std::string peer_;
  std::string local_;

  SshSessionPtr session_;
  SshKeyPtr identity_;
  SshChannelPtr channel_;  // after session_: destroyed first (see ssh_handles.hpp)
  // Shipping ferryd: the shell program's stderr so far, the file being sent and how far
  // (its answer lines arrive in rx_out_, ahead of ferryd's own output).
  std::string ship_err_;
  const ShippedFerryd* ship_file_ = nullptr;
  const std::string* ship_bytes_ = nullptr;  // its bytes or its gzip copy, as the host asked
  bool ship_gz_ = false;
  size_t ship_off_ = 0;
  uint64_t ship_sent_ = 0;
  bool tried_installed_ = false;
  std::chrono::steady_clock::time_point ship_began_;
  ssh_channel_callbacks_struct channel_cb_{};
  std::string rx_out_, rx_err_;  // channel data taken by on_channel_data, not yet delivered
  uint64_t rx_total_ = 0;
  // Bytes libssh read from the socket. Any libssh call may read it (a keepalive's or a
  // write's flush), not only the ones asio's readiness starts, so liveness is judged by
  // this counter moving.
  ssh_counter_struct socket_counter_{};
  uint64_t last_in_bytes_ = 0;

  asio::posix::stream_descriptor sd_;
  bool read_armed_ = false;
  bool write_armed_ = false;
  bool pump_posted_ = false;
  asio::steady_timer timer_;  // open deadline, then linger deadline
  asio::steady_timer keepalive_timer_;
  // While ferryd streams, the socket is looked at again after a short hold instead of at
  // once (see kHold in ssh_session_stream.cpp).
  asio::steady_timer hold_timer_;
  bool holding_ = false;
  uint64_t pumped_ = 0;  // stdout and stderr bytes the last pump took
  std::chrono::steady_clock::time_point last_rx_;

  Phase phase_ = Phase::kConnect;
  const char* phase_text_ = "connecting";
  OpenDone open_done_;
  BatchHandler on_data_;
  Link::ClosedHandler on_closed_;

  std::deque<std::string> queue_;
  size_t front_off_ = 0;
  bool eof_sent_ = false;
  bool user_closed_ = false;
  bool got_stdout_ = false;
  bool paused_ = false;         // pause_reading(true)
  bool held_back_ = false;      // stdout was refused while paused: libssh holds it
  bool remote_closed_ = false;  // on_channel_close: nothing more can reach ferryd
  int exit_status_ = -1;
  std::string exit_signal_;
  std::string stderr_partial_;
  std::string stderr_last_;  // last complete non-empty stderr line
};

}  // namespace ferry
