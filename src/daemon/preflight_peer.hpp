#pragma once
// ferryd's part of the data network's preflight: before the ranks start, rank 0's host listens
// where the ranks will meet (MASTER_ADDR:MASTER_PORT) and every other host connects there, so a
// host that cannot reach it fails the launch at once instead of hanging in the framework.

#include <asio.hpp>
#include <functional>
#include <memory>
#include <string>

#include "ferry/wire/messages.hpp"

namespace ferry {

class PreflightPeer {
 public:
  /// `send` gets the encoded PreflightResult frame.
  PreflightPeer(asio::io_context& io, std::function<void(const std::string&)> send);
  ~PreflightPeer();
  PreflightPeer(const PreflightPeer&) = delete;
  PreflightPeer& operator=(const PreflightPeer&) = delete;

  /// Listens or connects as `p` says, then sends one PreflightResult.
  void handle(const wire::Preflight& p);
  /// Stops listening (the ranks are about to start: the port is theirs).
  void close();

 private:
  void listen(const wire::Preflight& p);
  void connect(const wire::Preflight& p);
  void accept_next();

  asio::io_context& io_;
  std::function<void(const std::string&)> send_;
  std::unique_ptr<asio::ip::tcp::acceptor> acceptor_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

/// The name of this host's interface that `address` (IPv4 or IPv6 text) is on, or that the
/// route to it leaves by when it is another host's; "" when unknown.
std::string interface_toward(const std::string& address, bool own);

}  // namespace ferry
