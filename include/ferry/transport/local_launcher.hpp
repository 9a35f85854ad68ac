#pragma once
/// \file
/// Starts ferryd on this machine by fork/exec over a socketpair: no SSH for local hosts.

#include <asio.hpp>

#include "ferry/transport/link.hpp"

namespace ferry {

/// Forks `ferryd --stdio` with a socketpair as its stdin/stdout; its stderr is ferryrun's.
class LocalLauncher : public Launcher {
 public:
  explicit LocalLauncher(asio::io_context& io) : io_(io) {}
  void async_open(const HostEntry& host, const DaemonCommand& cmd, OpenHandler handler) override;
  void cancel_all() override {}

 private:
  asio::io_context& io_;
};

/// True when `name` denotes this machine: localhost, 127.0.0.0/8, ::1, this host's own
/// names, or one of its interface addresses. Names are not resolved through DNS.
bool is_local_host(const std::string& name);

}  // namespace ferry
