#pragma once
/// \file
/// Horovod's gloo finds the address it listens on by looking up the host's own name
/// (gethostname), even when HOROVOD_GLOO_IFACE names an interface. If the name does not
/// resolve, or resolves only to other machines' addresses, every Horovod rank on the host
/// fails: "Unable to find address for: NAME", or a crash inside gloo. ferryd checks the
/// name before it starts such ranks, so that the job fails with the cause instead.
///
/// The lookup may wait on a DNS server (where the name is not in /etc/hosts), 5 s a try
/// where none answers: OwnNameCheck makes it on a thread of its own, so that ferryd's loop
/// and the ranks that only hear a warning do not wait for it.

#include <asio.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ferry/common/result.hpp"

namespace ferry {

/// Whether ranks with this environment ("K=V") start Horovod's gloo controller when they
/// call hvd.init(): HOROVOD_GLOO_RENDEZVOUS_ADDR is set and HOROVOD_CONTROLLER is gloo
/// (any case) or unset.
bool uses_horovod_gloo(const std::vector<std::string>& env);

/// Looks `name` up as gloo does (getaddrinfo, any family, stream sockets) and succeeds if
/// a socket can bind one of its addresses here. Otherwise one line naming `name`, what
/// went wrong, and the file to fix. May wait for DNS when the name is not in /etc/hosts.
Status check_own_name(const std::string& name);

/// The failure check_own_name says when its lookup of `name` had not returned after `waited`.
Status own_name_unanswered(const std::string& name, std::chrono::milliseconds waited);

/// How long the end of a job on a host waits for a lookup of the host's name still under way
/// (for the warning it may bring) before it gives it up.
inline constexpr std::chrono::milliseconds kOwnNameWaitAtEnd{500};

/// This host's name (gethostname), as ferryd names its host in Hello and its lines.
std::string own_host_name();

/// One lookup of a name (check_own_name, or `look_up` in tests) on a thread of its own, its
/// result handed to the loop. What waits for it waits on the loop, never in it. Dropped
/// (start() again, drop(), the destructor), a lookup hands nothing over: its thread, left to
/// finish alone, touches nothing but what it shares with no one else.
class OwnNameCheck {
 public:
  using LookUp = std::function<Status(const std::string&)>;
  explicit OwnNameCheck(asio::io_context& io, LookUp look_up = check_own_name);
  OwnNameCheck(const OwnNameCheck&) = delete;
  OwnNameCheck& operator=(const OwnNameCheck&) = delete;
  ~OwnNameCheck();

  /// Looks `name` up (a lookup still under way is dropped); `result` gets its status on the
  /// loop, then whatever waits for it runs.
  void start(const std::string& name, std::function<void(const Status&)> result);
  /// True from start() until the result was handed over (or the lookup dropped).
  bool pending() const { return shared_ != nullptr; }
  /// Runs `f` on the loop once no lookup is pending: after the result, or in a later turn.
  void then(std::function<void()> f);
  /// As then(), but waits at most `limit`: past it the lookup is dropped and `f(false)` runs;
  /// `f(true)` after a result. Once per lookup: a second call while the first waits is
  /// ignored.
  void within(std::chrono::milliseconds limit, std::function<void(bool returned)> f);
  /// Forgets the lookup under way (nothing is handed over) and what waits for it.
  void drop();

 private:
  struct Shared;
  void finished(const Status& st);

  asio::io_context& io_;
  LookUp look_up_;
  std::shared_ptr<Shared> shared_;  // the lookup under way, shared with its thread
  std::function<void(const Status&)> result_;
  std::vector<std::function<void()>> waiting_;
  std::function<void(bool)> within_;
  asio::steady_timer limit_;
  // While a lookup is under way the loop has work: its run() waits for the result.
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> busy_;
};

}  // namespace ferry
