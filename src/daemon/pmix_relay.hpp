#pragma once
// Private to src/daemon/: where an Open MPI rank connects for PMIx. ferryd listens on the
// loopback interface itself, so that libpmix need not start for a job whose ranks never
// connect; once it runs, each rank's connection is relayed byte for byte to libpmix's own
// listener. All of it runs on a thread of its own: libpmix reads a client's handshake with a
// blocking read on its progress thread, while ferryd's loop may wait in a blocking libpmix
// call (registering a rank) for that thread, so the handshake's bytes must not wait for the
// loop.

#include <asio.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "ferry/common/result.hpp"

namespace ferry {

class PmixConnection;

class PmixRelays {
 public:
  using Socket = std::shared_ptr<asio::ip::tcp::socket>;
  struct Events {
    /// A rank connected (on the relay thread): answer with forward() or drop().
    std::function<void(Socket rank)> connected;
    /// Something went wrong (on the relay thread), for the user.
    std::function<void(std::string why)> failed;
  };

  /// Listens on an ephemeral loopback port and starts the relay thread.
  static Result<std::unique_ptr<PmixRelays>> listen(Events events);
  /// Closes the listener and every relay, and ends the thread.
  ~PmixRelays();
  PmixRelays(const PmixRelays&) = delete;
  PmixRelays& operator=(const PmixRelays&) = delete;

  /// The port the ranks are given.
  uint16_t port() const { return port_; }
  /// Relays `rank` to libpmix's listener on `library_port` (from any thread).
  void forward(const Socket& rank, uint16_t library_port);
  /// Closes `rank`: its PMIx_Init fails (from any thread).
  void drop(const Socket& rank);

 private:
  explicit PmixRelays(Events events);
  void accept_next();
  void open(asio::ip::tcp::socket rank, uint16_t library_port);

  Events events_;
  asio::io_context io_;
  asio::ip::tcp::acceptor acceptor_;
  std::set<std::shared_ptr<PmixConnection>> open_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::thread thread_;
  uint16_t port_ = 0;
};

}  // namespace ferry
