// A pool host's ferryds: forked by the fork server, exec'd without one, one kept as a spare.
#include "ferry/pool/ferryd_starter.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "ferry/pool/fork_server.hpp"
#include "ferry/process/spawn.hpp"

namespace ferry {

namespace {

// A spare ferryd older than this is replaced (its greeting's free port may be taken by then).
constexpr auto kSpareAge = std::chrono::seconds(15);

// This ferryd's own file, even if it was replaced or removed since (a new version installed
// under a running pool), in `mode` on `stream` (stdin and stdout) and `err`.
SpawnRequest exec_request(const std::string& exe, const char* mode, int stream, int err,
                          int death_signal) {
  SpawnRequest req;
  req.path = "/proc/self/exe";
  req.argv = {exe, mode};
  for (char** e = environ; e && *e; ++e) req.env.emplace_back(*e);
  req.stdin_fd = stream;
  req.stdout_fd = stream;
  req.stderr_fd = err;
  req.parent_death_signal = death_signal;
  return req;
}

// A job's ferryd's stream (this side's end, the ferryd's) and its stderr pipe.
struct Ends {
  UniqueFd mine, theirs, err_read, err_write;
};

Result<Ends> make_ends() {
  int sv[2], ep[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    return make_error(std::string("socketpair: ") + std::strerror(errno));
  Ends e;
  e.mine.reset(sv[0]);
  e.theirs.reset(sv[1]);
  if (::pipe2(ep, O_CLOEXEC) != 0) return make_error(std::string("pipe: ") + std::strerror(errno));
  e.err_read.reset(ep[0]);
  e.err_write.reset(ep[1]);
  return e;
}

}  // namespace

FerrydStarter::FerrydStarter(asio::io_context& io, std::string exe, Events events)
    : io_(io), exe_(std::move(exe)), events_(std::move(events)), spare_timer_(io) {}

void FerrydStarter::start() {
  start_fork_server();
  make_spare();
}

// The fork server: one `ferryd --fork-server`, exec'd once, that loads the CPU topology and
// forks each job's ferryd from there (no exec, no dynamic linking, no topology discovery per
// job). Without it (it could not start, or it died), each ferryd is exec'd as before.
void FerrydStarter::start_fork_server() {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return;
  UniqueFd mine(sv[0]), theirs(sv[1]);
  // This process gone: the fork server goes at once (and what it forked gets SIGTERM).
  auto pid = spawn_process(exec_request(exe_, "--fork-server", theirs.get(), 2, SIGKILL));
  if (!pid) return;
  server_pid_ = *pid;
  server_.emplace(io_, mine.release());
  server_->non_blocking(true);
  read_server();
}

void FerrydStarter::read_server() {
  server_->async_wait(asio::posix::stream_descriptor::wait_read, [this](std::error_code ec) {
    if (ec || !server_) return;
    for (;;) {
      auto e = read_fork_server_event(server_->native_handle());
      if (!e) return server_lost();
      if (!*e) break;
      on_server_event(**e);
      if (!server_) return;
    }
    read_server();
  });
}

// The fork server ended: ferryds are exec'd from now on. What it forked got SIGTERM with its
// end; their exit statuses will not come (the caller's streams end without them).
void FerrydStarter::server_lost() {
  server_.reset();
  if (spare_ && spare_->forked) drop_spare();
  awaiting_.clear();
  refill();
}

void FerrydStarter::on_server_event(const ForkServerEvent& e) {
  if (e.kind == ForkServerEvent::Kind::kExited) return events_.exited(e.pid, e.status);
  if (awaiting_.empty()) return;
  const std::uint64_t token = awaiting_.front();
  awaiting_.pop_front();
  const bool forked = e.kind == ForkServerEvent::Kind::kForked;
  if (spare_ && spare_->token == token) {
    spare_->token = 0;
    if (forked)
      spare_->pid = e.pid;
    else
      drop_spare();  // the next job asks again, and its stream says why should that fail
    return;
  }
  if (forked)
    events_.forked(token, e.pid);
  else
    events_.failed(token, e.error);
}

Result<StartedFerryd> FerrydStarter::start_ferryd() {
  auto ends = make_ends();
  if (!ends) return ends.error();
  StartedFerryd s;
  s.born = std::chrono::steady_clock::now();
  if (server_) {
    // Forked by the fork server: the ends travel with the request, the pid with its answer.
    if (request_fork(server_->native_handle(), ends->theirs.get(), ends->err_write.get())) {
      s.forked = true;
      s.token = ++next_token_;
      awaiting_.push_back(s.token);
      s.sock = std::move(ends->mine);
      s.err = std::move(ends->err_read);
      return s;
    }
    server_lost();
  }
  // This process gone (its connection cut, or killed): the job's ferryd stops its ranks with
  // the job's grace, as when its stream ends.
  auto pid = spawn_process(
      exec_request(exe_, "--stdio", ends->theirs.get(), ends->err_write.get(), SIGTERM));
  if (!pid) return make_error("cannot start ferryd: " + pid.error().message);
  s.pid = *pid;
  s.sock = std::move(ends->mine);
  s.err = std::move(ends->err_read);
  return s;
}

// Its greeting names a free port, and ports free now may be taken later: a spare older than
// kSpareAge is replaced (the old one reads EOF and exits).
void FerrydStarter::make_spare() {
  spare_.reset();
  auto s = start_ferryd();
  if (!s) return;  // the next job starts its own and reports why it cannot
  spare_ = std::move(*s);
  spare_timer_.expires_after(kSpareAge);
  spare_timer_.async_wait([this](std::error_code ec) {
    if (!ec && !stopped_) make_spare();
  });
}

void FerrydStarter::drop_spare() {
  spare_.reset();
  spare_timer_.cancel();
}

Result<StartedFerryd> FerrydStarter::take() {
  if (spare_) {
    StartedFerryd s = std::move(*spare_);
    drop_spare();
    return s;
  }
  return start_ferryd();
}

void FerrydStarter::refill() {
  if (!stopped_ && !spare_) make_spare();
}

bool FerrydStarter::spare_ended(pid_t pid) {
  if (!spare_ || spare_->pid != pid) return false;
  drop_spare();
  return true;
}

void FerrydStarter::stop() {
  stopped_ = true;
  drop_spare();
  server_.reset();
}

}  // namespace ferry
