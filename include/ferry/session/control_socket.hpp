#pragma once
/// \file
/// A kept job's control socket: `control.sock`, a Unix stream socket (0600) in the job's 0700
/// directory, served by a thread of the job's front end. `ferry stop` and `ferry attach
/// --signal` ask through it and get the front end's own answer. One request a connection: a
/// line (`stop`, `signal USR1`, `state`), answered by a line. Two locks keep other users out:
/// the directory's mode (they cannot reach the socket), and the peer's credentials
/// (SO_PEERCRED), checked on every connection: a peer of another uid is answered "refused"
/// and nothing is done.

#include <functional>
#include <string>
#include <thread>

#include "ferry/common/posix_handles.hpp"
#include "ferry/common/result.hpp"

namespace ferry {

/// The socket's name in a job's directory.
inline constexpr const char* kControlSocketName = "control.sock";

class ControlServer {
 public:
  /// Answers one request line (without its newline) with one line.
  using Handler = std::function<std::string(const std::string& request)>;

  /// Binds `dir`/control.sock (a stale one is replaced) and serves it on a thread until
  /// destroyed. Error: one line naming the socket.
  static Result<std::unique_ptr<ControlServer>> start(const std::string& dir, Handler handler);
  /// Stops serving and removes the socket: a later request finds no front end.
  ~ControlServer();
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

 private:
  ControlServer(std::string path, UniqueFd listener, Handler handler);
  void serve();
  void answer(int conn);

  std::string path_;
  UniqueFd listener_;
  UniqueFd wake_read_, wake_write_;
  Handler handler_;
  std::thread thread_;
};

/// Sends `request` to the front end serving `dir`/control.sock and returns its answer. Error,
/// one line: no front end serves it (gone, or never had a socket), the socket may not be
/// reached (another user's), or no answer within a few seconds.
Result<std::string> control_request(const std::string& dir, const std::string& request);

}  // namespace ferry
