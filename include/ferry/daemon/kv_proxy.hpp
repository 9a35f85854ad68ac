#pragma once
/// \file
/// ferryd's end of the Horovod gloo rendezvous: an HTTP listener on
/// 127.0.0.1 that authenticates each connection's process (PeerAuthenticator: the job
/// secret in its environment) and carries every request, as a kKvRequest frame, over the
/// host's one connection to the front end's KvStore. Ranks therefore need no route to the
/// front end: only the SSH port of each host has to be reachable.

#include <sys/types.h>

#include <asio.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ferry/common/result.hpp"
#include "ferry/rendezvous/peer_auth.hpp"
#include "ferry/wire/messages.hpp"

namespace ferry {

/// The loopback KV listener of one ferryd. All work runs on the io_context given.
class KvProxy {
 public:
  /// Hands an authenticated request to the front end (ferryd sends it as a frame).
  using Forward = std::function<void(wire::KvRequest)>;
  /// One line for --verbose (why a connection was refused).
  using Log = std::function<void(const std::string&)>;
  /// The front end refused a PUT because the job's store is full (kStoreFullStatus): the pid
  /// of the process that sent it (the peer authenticated on its connection).
  using StoreFull = std::function<void(pid_t)>;

  KvProxy(asio::io_context& io, Forward forward, Log log);
  ~KvProxy();
  KvProxy(const KvProxy&) = delete;
  KvProxy& operator=(const KvProxy&) = delete;

  /// Listens on 127.0.0.1 at a port the kernel picks and starts accepting. Returns the port.
  Result<uint16_t> listen();
  /// Turns authentication on with the job's secret; until then every request gets 403.
  void set_secret(std::string secret);
  /// The ranks' pids, searched first when looking for a connection's process.
  void set_candidates(std::vector<pid_t> pids);
  /// Called when a request of a connection gets kStoreFullStatus (the reply still goes out).
  void on_store_full(StoreFull f) { store_full_ = std::move(f); }
  /// The front end's answer to the request numbered `reply.id`; dropped if its connection
  /// is gone.
  void reply(const wire::KvReply& reply);
  /// Stops listening and closes every connection.
  void close();
  /// Requests forwarded so far, and connections refused (for --verbose).
  uint64_t forwarded() const { return forwarded_; }
  uint64_t refused() const { return refused_; }

 private:
  struct Conn;
  void accept();
  void read(const std::shared_ptr<Conn>& c);
  void process(const std::shared_ptr<Conn>& c);
  void write(const std::shared_ptr<Conn>& c, std::string bytes, bool then_close);
  bool authenticate(Conn& c);

  asio::io_context& io_;
  asio::ip::tcp::acceptor acceptor_;
  Forward forward_;
  Log log_;
  StoreFull store_full_;
  ProcPeerIdentifier identifier_;
  std::unique_ptr<PeerAuthenticator> auth_;
  std::map<uint32_t, std::weak_ptr<Conn>> pending_;
  std::vector<std::weak_ptr<Conn>> conns_;
  uint32_t next_id_ = 1;
  uint64_t forwarded_ = 0;
  uint64_t refused_ = 0;
  bool closed_ = false;
};

}  // namespace ferry
