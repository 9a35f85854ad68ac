#include "ferry/transport/local_launcher.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <deque>
#include <memory>
#include <utility>

#include "child_reaper.hpp"
#include "ferry/common/interface_addresses.hpp"
#include "ferry/process/spawn.hpp"
#include "ferry/transport/socket_link.hpp"

namespace ferry {
namespace {

using asio::local::stream_protocol;

// ferryd closes its end of the socket only when exiting, so its status follows EOF closely;
// the report waits this long for it at most.
constexpr auto kExitStatusWait = std::chrono::milliseconds(1000);
// After close(), ferryd stops its ranks and exits (about a second); it is reaped in the
// background meanwhile, so no zombie stays for the rest of the job.
constexpr auto kCloseReapWait = std::chrono::seconds(30);

class LocalLink final : public SocketLink<stream_protocol> {
 public:
  LocalLink(asio::io_context& io, int fd, pid_t pid)
      : SocketLink(io, stream_protocol::socket(io, stream_protocol(), fd)), pid_(pid) {}
  ~LocalLink() override { close(); }
  LocalLink(const LocalLink&) = delete;
  LocalLink& operator=(const LocalLink&) = delete;

  std::string peer_address() const override { return ""; }
  std::string describe() const override { return "localhost"; }

 private:
  void closed_by_us() override {
    async_reap(io_, std::exchange(pid_, -1), kCloseReapWait, nullptr);
  }

  // The stream ended: the close reason waits for ferryd's exit status, off the loop.
  void finish(std::string reason) override {
    async_reap(io_, std::exchange(pid_, -1), kExitStatusWait,
               [this, alive = alive_, reason](std::optional<int> status) mutable {
                 if (!*alive) return;
                 if (reason.empty() && status) reason = exit_reason(*status);
                 report_closed(reason);
               });
  }

  static std::string exit_reason(int status) {
    if (WIFSIGNALED(status)) return "ferryd killed by signal " + std::to_string(WTERMSIG(status));
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
      return "ferryd exited with status " + std::to_string(WEXITSTATUS(status));
    return "";
  }

  pid_t pid_;
};

}  // namespace

void LocalLauncher::async_open(const HostEntry& host, const DaemonCommand& cmd,
                               OpenHandler handler) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    handler(make_error(host.name + ": socketpair: " + std::strerror(errno)));
    return;
  }
  SpawnRequest req;
  req.path = cmd.ferryd_path;
  req.argv = {cmd.ferryd_path, "--stdio"};
  for (char** e = environ; e && *e; ++e) req.env.emplace_back(*e);
  req.stdin_fd = sv[1];
  req.stdout_fd = sv[1];
  // ferryrun gone (even by SIGKILL): ferryd reads EOF on the socket and gives its ranks
  // SIGTERM and the job's --kill-grace, as a remote ferryd does. SIGKILL here would take
  // that grace away; SIGTERM leads ferryd down the same path, should the EOF not come.
  req.parent_death_signal = SIGTERM;
  auto pid = spawn_process(req);
  ::close(sv[1]);
  if (!pid) {
    ::close(sv[0]);
    std::string why = pid.error().message;
    // ENOENT also means a script's interpreter is missing: then the message says so already.
    if (pid.error().code == ENOENT && ::access(cmd.ferryd_path.c_str(), F_OK) != 0)
      why = "ferryd not found at " + cmd.ferryd_path;
    handler(make_error(host.name + ": " + why));
    return;
  }
  std::unique_ptr<Link> link = std::make_unique<LocalLink>(io_, sv[0], *pid);
  // Deliver asynchronously, like a remote open, so callers see one behaviour.
  asio::post(io_, [h = std::move(handler), l = std::move(link)]() mutable { h(std::move(l)); });
}

bool is_local_host(const std::string& name) {
  if (name == "localhost" || name == "localhost.localdomain" || name == "::1" ||
      name == "ip6-localhost")
    return true;
  in_addr a4{};
  if (::inet_pton(AF_INET, name.c_str(), &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127) return true;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) {
    std::string h = host;
    if (name == h) return true;
    auto dot = h.find('.');
    if (dot != std::string::npos && name == h.substr(0, dot)) return true;
  }
  auto entries = list_interface_addresses();
  if (!entries) return false;
  for (const auto& e : *entries)
    if (!e.address.empty() && name == e.address) return true;
  return false;
}

}  // namespace ferry
