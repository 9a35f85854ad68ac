#pragma once
// ferryd's answers that take seconds: a StateRequest (samples every running rank's CPU for a
// moment, reads its stack, and sends the StateReport) and a CheckRequest (runs python3 for the
// versions). They run on threads of their own: the host's output, heartbeats and exits go on
// meanwhile.

#include <sys/types.h>

#include <asio.hpp>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace ferry {

class StateCollector {
 public:
  /// `send` gets each encoded StateReport frame, on the io_context's thread.
  StateCollector(asio::io_context& io, std::function<void(const std::string&)> send);
  /// Waits for collections under way (each is bounded by the debugger's time limit).
  ~StateCollector();
  StateCollector(const StateCollector&) = delete;
  StateCollector& operator=(const StateCollector&) = delete;

  /// Reports `ranks` (global rank, pid) for request `id`. A second request while one runs is
  /// answered when its own collection is done; both run.
  void collect(uint32_t id, std::vector<std::pair<int32_t, pid_t>> ranks);
  /// Describes this host for `ferryrun --check` (a CheckReport), on a thread as collect().
  void check();

 private:
  asio::io_context& io_;
  std::function<void(const std::string&)> send_;
  std::list<std::thread> threads_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace ferry
