// The control socket of a kept job: a thread of the front end accepts, checks the peer's uid,
// reads one line and writes the handler's answer.
#include "ferry/session/control_socket.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ferry {

namespace {

constexpr int kAnswerWithinMs = 5000;
constexpr size_t kMaxRequest = 256;
// An answer may be a live view's rows (`ferry top`): a JSON line of every rank.
constexpr size_t kMaxAnswer = size_t{64} << 20;

// The socket's address. A path too long for sun_path (a deep $XDG_STATE_HOME) is reached
// through an O_PATH descriptor of its directory, /proc/self/fd/N/control.sock; `dir_fd` keeps
// that descriptor open while the address is used.
Result<sockaddr_un> socket_address(const std::string& dir, UniqueFd& dir_fd) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::string path = dir + "/" + kControlSocketName;
  if (path.size() >= sizeof addr.sun_path) {
    dir_fd.reset(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!dir_fd) return make_error(dir + ": " + std::strerror(errno));
    path = "/proc/self/fd/" + std::to_string(dir_fd.get()) + "/" + kControlSocketName;
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

// Waits for `fd` to be ready for `events` until `deadline_ms` passes; false on timeout.
bool ready(int fd, short events, int timeout_ms) {
  pollfd p{fd, events, 0};
  int n = 0;
  do n = ::poll(&p, 1, timeout_ms);
  while (n < 0 && errno == EINTR);
  return n > 0;
}

// Reads up to a newline (dropped), EOF or `limit` bytes; false when nothing whole came in time.
bool read_line(int fd, std::string& line, size_t limit) {
  char buf[4096];
  while (line.find('\n') == std::string::npos && line.size() < limit) {
    if (!ready(fd, POLLIN, kAnswerWithinMs)) return false;
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    line.append(buf, static_cast<size_t>(n));
  }
  if (const size_t nl = line.find('\n'); nl != std::string::npos) line.resize(nl);
  return !line.empty();
}

void write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::send(fd, text.data() + done, text.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

}  // namespace

Result<std::unique_ptr<ControlServer>> ControlServer::start(const std::string& dir,
                                                            Handler handler) {
  const std::string path = dir + "/" + kControlSocketName;
  UniqueFd dir_fd;
  auto addr = socket_address(dir, dir_fd);
  if (!addr) return make_error("control socket " + path + ": " + addr.error().message);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return make_error("control socket " + path + ": " + std::strerror(errno));
  ::unlink(addr->sun_path);
  // 0600 from the start: no moment where another user's connect could pass the mode.
  const mode_t old_mask = ::umask(0177);
  const int bound = ::bind(fd.get(), reinterpret_cast<const sockaddr*>(&*addr), sizeof *addr);
  const int bind_errno = errno;
  ::umask(old_mask);
  if (bound != 0 || ::listen(fd.get(), 16) != 0)
    return make_error("control socket " + path + ": " +
                      std::strerror(bound != 0 ? bind_errno : errno));
  auto server =
      std::unique_ptr<ControlServer>(new ControlServer(path, std::move(fd), std::move(handler)));
  int wake[2];
  if (::pipe2(wake, O_CLOEXEC) != 0)
    return make_error("control socket " + path + ": " + std::strerror(errno));
  server->wake_read_.reset(wake[0]);
  server->wake_write_.reset(wake[1]);
  server->thread_ = std::thread([s = server.get()] { s->serve(); });
  return server;
}

ControlServer::ControlServer(std::string path, UniqueFd listener, Handler handler)
    : path_(std::move(path)), listener_(std::move(listener)), handler_(std::move(handler)) {}

ControlServer::~ControlServer() {
  if (thread_.joinable()) {
    const char c = 'x';
    (void)!::write(wake_write_.get(), &c, 1);
    thread_.join();
  }
  ::unlink(path_.c_str());
}

void ControlServer::serve() {
  for (;;) {
    pollfd p[2] = {{listener_.get(), POLLIN, 0}, {wake_read_.get(), POLLIN, 0}};
    if (::poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (p[1].revents != 0) return;
    UniqueFd conn(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (conn) answer(conn.get());
  }
}

// The request is read first, whoever sent it: a peer refused at once could find the socket
// closed under its own write (EPIPE) and never read why.
void ControlServer::answer(int conn) {
  std::string request;
  const bool whole = read_line(conn, request, kMaxRequest);
  ucred peer{};
  socklen_t len = sizeof peer;
  if (::getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0 || peer.uid != ::geteuid()) {
    write_all(conn, "refused: this job belongs to another user\n");
    return;
  }
  if (whole) write_all(conn, handler_(request) + "\n");
}

Result<std::string> control_request(const std::string& dir, const std::string& request) {
  const std::string path = dir + "/" + kControlSocketName;
  UniqueFd dir_fd;
  auto addr = socket_address(dir, dir_fd);
  if (!addr) return make_error("cannot reach its front end: " + addr.error().message);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return make_error(std::string("cannot reach its front end: ") + std::strerror(errno));
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&*addr), sizeof *addr) != 0) {
    if (errno == ENOENT || errno == ECONNREFUSED)
      return make_error("its front end no longer answers (" + path + ")");
    return make_error("cannot reach its front end through " + path + ": " + std::strerror(errno));
  }
  write_all(fd.get(), request + "\n");
  ::shutdown(fd.get(), SHUT_WR);
  std::string answer;
  if (!read_line(fd.get(), answer, kMaxAnswer))
    return make_error("its front end did not answer through " + path);
  return answer;
}

}  // namespace ferry
