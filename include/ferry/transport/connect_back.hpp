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

#include <chrono>
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

/// The target from ferryd's environment (kConnect*Var, SLURM_LAUNCH_NODE_IPADDR first, the
/// node from SLURMD_NODENAME else the host name); the secret variable is removed from the
/// environment so that no rank inherits it.
Result<ConnectBackTarget> connect_target_from_environment();

}  // namespace ferry
