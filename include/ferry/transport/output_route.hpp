#pragma once
/// \file
/// ferryrun's end of direct output routes. Over SSH every byte a rank writes is read,
/// encrypted and relayed by sshd, then decrypted and copied three times by libssh: the largest
/// cost of moving output (docs/performance.md). A direct route leaves sshd out: ferryrun
/// offers ferryd, over the SSH channel, a port, its own addresses and a per-host secret;
/// ferryd connects back (the handshake of connect_back.hpp, the token as node name) and from
/// then on sends its frames on that connection as sealed records (sealed_records.hpp: AES-GCM,
/// keyed from the handshake), no longer on its stdout. The SSH channel stays: ferryrun's
/// frames to ferryd, ferryd's stderr and exit status, and its life (ferryd ends when it ends).
///
/// The switch loses and reorders nothing: the route's first record says how many bytes
/// ferryd queued on stdout before it, and the link delivers exactly those from SSH first.
/// Where ferryd cannot connect back (a firewall, a container that reaches nothing), its frames
/// simply stay on SSH.

#include <asio.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ferry/transport/link.hpp"

namespace ferry {

/// One job's routes: listening sockets on the addresses offered (route_addresses; one port for
/// all, opened at the first offer), one secret per host.
class OutputRouter {
 public:
  /// `log`: --verbose lines (a route opened, a connection refused).
  OutputRouter(asio::io_context& io, std::function<void(const std::string&)> log);
  ~OutputRouter();
  OutputRouter(const OutputRouter&) = delete;
  OutputRouter& operator=(const OutputRouter&) = delete;

  /// What ferryd is told (wire::OutputRoute).
  struct Offer {
    std::vector<std::string> addresses;  ///< where it listens: route_addresses()
    uint16_t port = 0;
    std::string secret;  ///< 64 hex digits
    std::string token;   ///< names the host in the handshake
  };

  /// Wraps `inner` (not started yet) in a link that takes ferryd's frames from the route
  /// once it opens, and fills `offer`. When no route can be offered (libcrypto missing, no
  /// port to listen on) returns `inner` as it was and says why in `problem`.
  std::unique_ptr<Link> route(std::unique_ptr<Link> inner, Offer& offer, std::string& problem);

  class Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

/// The addresses a host is offered, and the router listens on, given the local address `via`
/// of its SSH connection and this machine's addresses `own`: `via` alone where it is not
/// loopback (the host reached it, so it can reach it back); otherwise `via` (if any) and every
/// address of `own` (a container's published port on this machine, or a proxy command).
std::vector<std::string> route_addresses(const std::string& via,
                                         const std::vector<std::string>& own);

}  // namespace ferry
