#pragma once
/// \file
/// The Link the front end holds for an SSH session. A session on the front end's loop is
/// called directly and hands its output on at once. A session on an I/O thread gets its
/// calls posted to that thread, and its output, stderr lines and end are posted back to
/// the loop: output as whole batches (moved, not copied), at most kInFlight bytes on their
/// way at once, beyond which the session stops taking ferryd's output, so a loop that
/// falls behind holds ferryd back through the SSH window as pause_reading() does. All
/// links of one launcher also share a budget of bytes in flight (InFlightBudget): with many
/// hosts, what reaches the loop after the front end paused every link (a console that fell
/// behind) is bounded by it, not by kInFlight times the hosts.

#include <asio/io_context.hpp>
#include <memory>
#include <string>

#include "ferry/transport/in_flight_budget.hpp"
#include "ferry/transport/link.hpp"

namespace ferry {

class SshIoThread;
class SshSession;

class SshLink : public Link {
 public:
  /// Made on the session's thread once it has opened; used on `loop` from then on.
  /// `budget`: shared by the launcher's links on I/O threads (null: none).
  SshLink(asio::io_context& loop, std::shared_ptr<SshIoThread> thread,
          std::shared_ptr<SshSession> session, std::shared_ptr<InFlightBudget> budget = nullptr);
  /// close().
  ~SshLink() override;
  SshLink(const SshLink&) = delete;
  SshLink& operator=(const SshLink&) = delete;

  void start(DataHandler on_data, ClosedHandler on_closed) override;
  void send(std::string bytes) override;
  void pause_reading() override;
  void resume_reading() override;
  void close() override;
  std::string peer_address() const override { return peer_; }
  std::string local_address() const override { return local_; }
  std::string describe() const override { return describe_; }
  bool relays_output() const override { return true; }

  /// Batches of ferryd's output on their way to the loop, at most (bytes), per link; for
  /// all links together see SshOptions::all_in_flight.
  static constexpr size_t kInFlight = size_t{1} << 20;

 private:
  struct Shared;
  /// Runs `call(session, shared)` on the session's thread; nothing once closed.
  template <class Call>
  void on_thread(Call call);

  std::shared_ptr<SshIoThread> thread_;  // outlives the session: destroyed after it
  std::shared_ptr<SshSession> session_;  // null once closed (handed to the thread)
  std::shared_ptr<Shared> shared_;
  std::string peer_, local_, describe_;  // read on the thread when it opened
};

}  // namespace ferry
