// ferryd --fork-server: the jobs' ferryds of a warm pool's host, forked from one prepared
// process. A plain blocking loop: no asio here, so a child starts from a clean image (its own
// loop, its own signal handling) with nothing of the server's but memory.
#include "ferry/pool/fork_server.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

#include "ferry/common/posix_handles.hpp"

namespace ferry {

namespace {

constexpr std::size_t kMessage = 512;

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

bool say(int control, const std::string& text) {
  return ::send(control, text.data(), text.size(), MSG_NOSIGNAL) ==
         static_cast<ssize_t>(text.size());
}

// A request as sent and received: one byte, and room for its two fds.
struct RequestMessage {
  RequestMessage() {
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = space.data();
    msg.msg_controllen = space.size();
  }
  RequestMessage(const RequestMessage&) = delete;
  RequestMessage& operator=(const RequestMessage&) = delete;
  ~RequestMessage() = default;

  char byte = 'F';
  iovec iov{&byte, 1};
  alignas(cmsghdr) std::array<char, CMSG_SPACE(2 * sizeof(int))> space{};
  msghdr msg{};
};

// One request: its two fds (-1 where missing). 0: end of stream; -1: error; 1: a request.
int receive_request(int control, std::array<int, 2>& fds) {
  fds = {-1, -1};
  RequestMessage m;
  msghdr& msg = m.msg;
  const ssize_t n = ::recvmsg(control, &msg, MSG_CMSG_CLOEXEC);
  if (n <= 0) return n == 0 ? 0 : -1;
  std::size_t got = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int fd = -1;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      if (got < fds.size())
        fds[got++] = fd;
      else
        ::close(fd);
    }
  }
  return 1;
}

// `ps` shows the child as `ferryd --stdio`, any other job's ferryd; its comm is "ferryd" (the
// server was exec'd through /proc/self/exe, whose comm is "exe").
void name_job_ferryd(char** argv) {
  ::prctl(PR_SET_NAME, "ferryd");
  if (!argv || !argv[0] || !argv[1]) return;
  constexpr std::string_view kStdio = "--stdio";
  const std::size_t room = std::strlen(argv[1]);
  if (room < kStdio.size()) return;
  std::memset(argv[1], 0, room);
  std::memcpy(argv[1], kStdio.data(), kStdio.size());
}

// In the forked child: one job's ferryd on `stream` (stdin and stdout) and `err` (stderr).
[[noreturn]] void become_job_ferryd(int control, int signals, const std::array<int, 2>& fds,
                                    const sigset_t& mask, pid_t server,
                                    const ForkServerHooks& hooks, char** argv) {
  ::close(control);
  ::close(signals);
  // The fork server gone (so its ferryd --pool, so the pool's connection): stop the ranks
  // with the job's grace, as when the stream ends.
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != server) ::_exit(1);
  // A process group of its own, as an exec'd ferryd has (spawn_process): a signal to one
  // job's ferryd's group reaches no other job's.
  ::setpgid(0, 0);
  ::sigprocmask(SIG_SETMASK, &mask, nullptr);
  name_job_ferryd(argv);
  const int in = ::fcntl(fds[0], F_DUPFD_CLOEXEC, 3);
  const int out = ::fcntl(fds[0], F_DUPFD_CLOEXEC, 3);
  if (in < 0 || out < 0 || ::dup2(fds[1], 2) < 0) ::_exit(2);
  ::close(fds[0]);
  ::close(fds[1]);
  const int code = hooks.serve(in, out);
  std::fflush(nullptr);
  ::_exit(code);
}

void report_exits(int control) {
  int status = 0;
  pid_t pid = 0;
  while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0)
    say(control, "exited " + std::to_string(pid) + " " + std::to_string(status));
}

}  // namespace

int run_fork_server(int control, const ForkServerHooks& hooks, char** argv) {
  ::prctl(PR_SET_NAME, "ferryd");
  sigset_t chld, mask;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  ::sigprocmask(SIG_BLOCK, &chld, &mask);
  UniqueFd signals(::signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!signals) {
    std::fprintf(stderr, "ferryd --fork-server: %s\n", errno_text("signalfd").c_str());
    return 1;
  }
  if (hooks.prepare) hooks.prepare();
  const pid_t self = ::getpid();
  for (;;) {
    std::array<pollfd, 2> p{{{control, POLLIN, 0}, {signals.get(), POLLIN, 0}}};
    if (::poll(p.data(), p.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return 1;
    }
    if (p[1].revents != 0) {
      signalfd_siginfo info{};
      while (::read(signals.get(), &info, sizeof info) == sizeof info) {
      }
      report_exits(control);
    }
    if (p[0].revents == 0) continue;
    std::array<int, 2> fds{};
    const int got = receive_request(control, fds);
    if (got <= 0) return got == 0 ? 0 : 1;
    UniqueFd stream(fds[0]), err(fds[1]);
    if (!stream || !err) {
      if (!say(control, "failed the request carried no stream")) return 1;
      continue;
    }
    const pid_t pid = ::fork();
    if (pid == 0)
      become_job_ferryd(control, signals.get(), {stream.get(), err.get()}, mask, self, hooks, argv);
    const std::string answer = pid > 0 ? "forked " + std::to_string(pid)
                                       : "failed cannot fork ferryd: " + errno_text("fork");
    if (!say(control, answer)) return 1;
  }
}

Status request_fork(int control, int stream, int err) {
  RequestMessage m;
  msghdr& msg = m.msg;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(2 * sizeof(int));
  const std::array<int, 2> fds{stream, err};
  std::memcpy(CMSG_DATA(c), fds.data(), sizeof fds);
  if (::sendmsg(control, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) != 1)
    return make_error("the fork server: " + errno_text("send"));
  return {};
}

Result<ForkServerEvent> parse_fork_server_event(const std::string& message) {
  ForkServerEvent e;
  auto bad = [&] { return make_error("the fork server said '" + message + "'"); };
  auto number = [](const char* text, char** end) { return std::strtol(text, end, 10); };
  if (message.starts_with("failed ")) {
    e.kind = ForkServerEvent::Kind::kFailed;
    e.error = message.substr(7);
    return e;
  }
  char* end = nullptr;
  if (message.starts_with("forked ")) {
    e.kind = ForkServerEvent::Kind::kForked;
    e.pid = static_cast<pid_t>(number(message.c_str() + 7, &end));
    if (e.pid <= 0 || *end != '\0') return bad();
    return e;
  }
  if (message.starts_with("exited ")) {
    e.kind = ForkServerEvent::Kind::kExited;
    e.pid = static_cast<pid_t>(number(message.c_str() + 7, &end));
    if (e.pid <= 0 || *end != ' ') return bad();
    const char* status = end + 1;
    e.status = static_cast<int>(number(status, &end));
    if (end == status || *end != '\0') return bad();
    return e;
  }
  return bad();
}

Result<std::optional<ForkServerEvent>> read_fork_server_event(int control) {
  std::array<char, kMessage> buf{};
  const ssize_t n = ::recv(control, buf.data(), buf.size(), MSG_DONTWAIT);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
      return std::optional<ForkServerEvent>();
    return make_error("the fork server: " + errno_text("recv"));
  }
  if (n == 0) return make_error("the fork server ended");
  auto e = parse_fork_server_event(std::string(buf.data(), static_cast<std::size_t>(n)));
  if (!e) return e.error();
  return std::optional<ForkServerEvent>(std::move(*e));
}

}  // namespace ferry
