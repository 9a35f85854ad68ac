#pragma once
/// \file
/// Who is on the other end of a loopback TCP connection, and may it use the job's KV store?
///
/// Gloo's HTTPStore client cannot send a custom header or token, so ferryd authenticates the
/// *process* instead: it listens on 127.0.0.1 only (never on the network), and for each
/// accepted connection finds the client socket in /proc/net/tcp (inode, uid), the process
/// that holds that socket (/proc/<pid>/fd links "socket:[inode]"), and requires
/// `FERRY_JOB_SECRET=<secret>` in that process's initial environment (/proc/<pid>/environ,
/// readable only by its owner and root). Ranks inherit the secret from ferryd; other users'
/// processes, other containers and other machines cannot present it. A process of the same
/// user could read a rank's environ: the same user can ptrace the ranks anyway, so that is
/// outside what this protects against.

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/common/result.hpp"

namespace ferry {

/// The environment variable that carries the job secret to the ranks.
inline constexpr char kJobSecretVar[] = "FERRY_JOB_SECRET";

/// An accepted IPv4 TCP connection, as the server sees it (addresses and ports in host byte
/// order): `client_*` is the remote end of the accepted socket, `server_*` its local end.
struct TcpConnection {
  uint32_t client_addr = 0x7f000001;
  uint16_t client_port = 0;
  uint32_t server_addr = 0x7f000001;
  uint16_t server_port = 0;
};

/// Looks up the process behind a connection and reads a process's environment.
class PeerIdentifier {
 public:
  virtual ~PeerIdentifier() = default;
  /// The process holding the client end of `conn`, or an Error saying why none was found.
  virtual Result<pid_t> peer_pid(const TcpConnection& conn) = 0;
  /// The initial environment of `pid` ("K=V" entries), or an Error (gone, not readable).
  virtual Result<std::vector<std::string>> environment(pid_t pid) = 0;
};

/// PeerIdentifier over a procfs tree (`proc_root`, "/proc" in production; tests point it at a
/// made-up tree). The client socket is looked up with NETLINK_SOCK_DIAG when `proc_root` is
/// "/proc" (one hash lookup), else (or if that fails) in <root>/net/tcp and tcp6. The
/// process holding it is searched, in order: the pids that matched recently, the candidate pids
/// (the job's ranks) and their descendants (via /proc/<pid>/task/<tid>/children), then every
/// process owned by the socket's uid.
class ProcPeerIdentifier : public PeerIdentifier {
 public:
  explicit ProcPeerIdentifier(std::string proc_root = "/proc");
  /// The job's rank pids; their process trees are searched before the rest of the system.
  void set_candidates(std::vector<pid_t> pids) { candidates_ = std::move(pids); }
  Result<pid_t> peer_pid(const TcpConnection& conn) override;
  Result<std::vector<std::string>> environment(pid_t pid) override;

  /// What the last successful peer_pid() had to do: "recent", "ranks" or "scan".
  const std::string& last_path() const { return last_path_; }
  /// Turns the netlink lookup off (to measure or test the /proc tables on a real system).
  void use_sock_diag(bool on) { sock_diag_ = on; }

 private:
  struct SocketEntry {
    uint64_t inode = 0;
    uint32_t uid = 0;
  };
  Result<SocketEntry> find_socket(const TcpConnection& conn) const;
  Result<pid_t> find_holder(const SocketEntry& sock);
  bool holds_socket(pid_t pid, const std::string& link) const;
  std::vector<pid_t> descendants(const std::vector<pid_t>& roots) const;
  void remember(pid_t pid);

  std::string root_;
  bool sock_diag_ = false;
  std::vector<pid_t> candidates_;
  std::deque<pid_t> recent_;
  std::string last_path_;
};

/// Decides whether a connection may use the KV store: its peer process must carry
/// `FERRY_JOB_SECRET=<secret>`. Refused connections get `403 Forbidden`.
class PeerAuthenticator {
 public:
  /// `secret` must be non-empty (make one with new_job_secret()).
  PeerAuthenticator(PeerIdentifier& identifier, std::string secret)
      : identifier_(identifier), secret_(std::move(secret)) {}
  /// The authenticated peer's pid, or an Error naming why it was refused (for --verbose).
  Result<pid_t> authenticate(const TcpConnection& conn);

 private:
  PeerIdentifier& identifier_;
  std::string secret_;
};

/// 32 random bytes from the system CSPRNG, as 64 lowercase hex digits; an Error if no
/// randomness is available.
Result<std::string> new_job_secret();

}  // namespace ferry
