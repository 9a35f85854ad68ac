#pragma once
/// \file
/// A ferryd that a workload manager started (srun) connects back to ferryrun over TCP
/// instead of talking on its stdin/stdout. Both sides prove they hold the job's secret
/// without sending it: ferryrun → magic, nonce F; ferryd → magic, nonce D,
/// HMAC-SHA256(secret, "ferryd" F D node), node name; ferryrun → HMAC(secret, "ferryrun" D F).
/// After that the socket carries ferry's framed protocol (Hello first), as stdin/stdout do.
///
/// The secret, port and addresses reach ferryd in its environment (never on a command line):
/// kConnectSecretVar, kConnectPortVar, kConnectAddrsVar.

#include <asio.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/common/result.hpp"
#include "ferry/process/unique_fd.hpp"

namespace ferry {

inline constexpr char kConnectSecretVar[] = "FERRY_CONNECT_SECRET";
inline constexpr char kConnectPortVar[] = "FERRY_CONNECT_PORT";
/// Comma-separated addresses of ferryrun, tried in order after SLURM_LAUNCH_NODE_IPADDR.
inline constexpr char kConnectAddrsVar[] = "FERRY_CONNECT_ADDRS";

inline constexpr char kConnectMagic[] = "FERRYCB1";  // 8 bytes on the wire
inline constexpr size_t kNonceSize = 32;
inline constexpr size_t kMacSize = 32;
/// Longest node name a ferryd may announce.
inline constexpr size_t kMaxNodeName = 255;

/// HMAC-SHA256 of `data` under `key`, 32 raw bytes; "" when OpenSSL's libcrypto cannot be
/// loaded (it is loaded on first use, never at ferryd's start: see have_hmac()).
std::string hmac_sha256(std::string_view key, std::string_view data);
/// Whether hmac_sha256() works here.
bool have_hmac();
/// Compares in time independent of where they differ.
bool equal_secret(std::string_view a, std::string_view b);

/// ferryd's proof: HMAC(secret, "ferryd" F D node).
std::string ferryd_proof(std::string_view secret, std::string_view nonce_f,
                         std::string_view nonce_d, std::string_view node);
/// ferryrun's proof: HMAC(secret, "ferryrun" D F).
std::string ferryrun_proof(std::string_view secret, std::string_view nonce_d,
                           std::string_view nonce_f);

/// Where a connecting ferryd goes and what it proves.
struct ConnectBackTarget {
  std::vector<std::string> addresses;  ///< tried in order
  uint16_t port = 0;
  std::string secret;
  std::string node;                          ///< this node's name, as ferryrun knows it
  std::chrono::milliseconds timeout{10000};  ///< per address: connect and handshake
};

/// ferryd's side: connects to the first address that answers, runs the handshake, and returns
/// the socket, ready for the framed protocol. Blocking (ferryd has no loop yet).
Result<UniqueFd> connect_back(const ConnectBackTarget& target);

/// A finished handshake: the socket, and both nonces (they key a sealed output route).
struct ConnectedBack {
  UniqueFd fd;
  std::string nonce_f, nonce_d;
};

/// ferryd's side on a running io_context: each address in turn (target.timeout each, connect
/// and handshake), then `done` with the first that passed or every address's reason. The
/// socket is close-on-exec and non-blocking.
void async_connect_back(asio::io_context& io, ConnectBackTarget target,
                        std::function<void(Result<ConnectedBack>)> done);

/// ferryrun's side of one connection: who may connect under which secret.
/// `secret_of(node)`: the secret the named ferryd must prove, or nothing to refuse it.
struct ConnectBackCheck {
  std::function<std::optional<std::string>(const std::string& node)> secret_of;
  std::chrono::milliseconds timeout{10000};  ///< for the whole handshake
};
/// The peer that passed: its node name and the nonces.
struct AcceptedBack {
  std::string node;
  std::string nonce_f, nonce_d;
};
/// Runs ferryrun's half of the handshake on `sock` (just accepted), then `done`: the peer
/// (ferryrun's proof already written), or a one-line reason it was dropped.
void serve_connect_back(asio::io_context& io, const std::shared_ptr<asio::ip::tcp::socket>& sock,
                        ConnectBackCheck check, std::function<void(Result<AcceptedBack>)> done);

/// The target from ferryd's environment (kConnect*Var, SLURM_LAUNCH_NODE_IPADDR first, the
/// node from SLURMD_NODENAME else the host name); the secret variable is removed from the
/// environment so that no rank inherits it.
Result<ConnectBackTarget> connect_target_from_environment();

}  // namespace ferry
