#pragma once
// Test support: a launcher that fails every open with a fixed reason, like a host whose
// SSH port refuses connections.

#include <asio.hpp>

#include "ferry/transport/link.hpp"

namespace ferry::test_support {

class RefusingLauncher : public Launcher {
 public:
  explicit RefusingLauncher(asio::io_context& io) : io_(io) {}
  void async_open(const HostEntry& host, const DaemonCommand&, OpenHandler h) override {
    asio::post(io_, [h, name = host.name] {
      h(make_error(name + ":22: cannot connect: Connection refused"));
    });
  }
  void cancel_all() override {}

 private:
  asio::io_context& io_;
};

}  // namespace ferry::test_support
