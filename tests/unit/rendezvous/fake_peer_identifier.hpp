#pragma once
// A PeerIdentifier over made-up connections and environments, for PeerAuthenticator.

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ferry/rendezvous/peer_auth.hpp"

namespace ferry::test_support {

/// Connections keyed by client port, environments keyed by pid.
class FakePeerIdentifier : public PeerIdentifier {
 public:
  void add_peer(uint16_t client_port, pid_t pid) { peers_[client_port] = pid; }
  void set_environment(pid_t pid, std::vector<std::string> env) { envs_[pid] = std::move(env); }

  Result<pid_t> peer_pid(const TcpConnection& conn) override {
    auto it = peers_.find(conn.client_port);
    if (it == peers_.end()) return make_error("no such client socket");
    return it->second;
  }

  Result<std::vector<std::string>> environment(pid_t pid) override {
    auto it = envs_.find(pid);
    if (it == envs_.end()) return make_error("permission denied");
    return it->second;
  }

 private:
  std::map<uint16_t, pid_t> peers_;
  std::map<pid_t, std::vector<std::string>> envs_;
};

}  // namespace ferry::test_support
