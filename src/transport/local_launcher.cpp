#include "ferry/transport/local_launcher.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <deque>
#include <memory>
#include <utility>

#include "child_reaper.hpp"
#include "ferry/process/spawn.hpp"

namespace ferry {
namespace {

using asio::local::stream_protocol;

// ferryd closes its end of the socket only when exiting, so its status follows EOF closely;
// the report waits this long for it at most.
constexpr auto kExitStatusWait = std::chrono::milliseconds(1000);
// After close(), ferryd stops its ranks and exits (about a second); it is reaped in the
// background meanwhile, so no zombie stays for the rest of the job.
constexpr auto kCloseReapWait = std::chrono::seconds(30);

class LocalLink final : public Link {
 public:
  LocalLink(asio::io_context& io, int fd, pid_t pid) : io_(io), sock_(io), pid_(pid) {
    sock_.assign(stream_protocol(), fd);
  }
  LocalLink(const LocalLink&) = delete;
  LocalLink& operator=(const LocalLink&) = delete;
  ~LocalLink() override {
    close();
    *alive_ = false;
  }

  void start(DataHandler on_data, ClosedHandler on_closed) override {
    on_data_ = std::move(on_data);
    on_closed_ = std::move(on_closed);
    started_ = true;
    if (!paused_) read();
  }

  void send(std::string bytes) override {
    if (closed_) return;
    pending_ += bytes.size();
    queue_.push_back(std::move(bytes));
    if (!writing_) write_next();
  }

  size_t pending_bytes() const override { return pending_; }

  void pause_reading() override { paused_ = true; }

  void resume_reading() override {
    paused_ = false;
    if (started_ && !reading_ && !closed_) read();
  }

  void close() override {
    on_closed_ = nullptr;  // also silences a report still waiting for ferryd's status
    if (closed_) return;
    closed_ = true;
    std::error_code ignored;
    sock_.close(ignored);
    async_reap(io_, std::exchange(pid_, -1), kCloseReapWait, nullptr);
  }

  std::string peer_address() const override { return ""; }
  std::string describe() const override { return "localhost"; }

 private:
  void read() {
    reading_ = true;
    // The link may be gone when a read cancelled by close() completes: check before use.
    sock_.async_read_some(asio::buffer(buf_), [this, alive = alive_](std::error_code ec, size_t n) {
      if (!*alive) return;
      reading_ = false;
      if (closed_) return;
      if (ec) {
        std::string reason;
        if (ec != asio::error::eof) reason = ec.message();
        finish(reason);
        return;
      }
      on_data_(std::string_view(buf_.data(), n));
      if (!closed_ && !paused_) read();
    });
  }

  void write_next() {
    if (queue_.empty() || closed_) {
      writing_ = false;
      return;
    }
    writing_ = true;
    asio::async_write(sock_, asio::buffer(queue_.front()), [this](std::error_code ec, size_t n) {
      if (closed_) return;
      if (ec) {
        finish(ec.message());
        return;
      }
      pending_ -= n;
      queue_.pop_front();
      write_next();
    });
  }

  // The stream ended: the close reason waits for ferryd's exit status, off the loop.
  void finish(std::string reason) {
    closed_ = true;
    std::error_code ignored;
    sock_.close(ignored);
    async_reap(io_, std::exchange(pid_, -1), kExitStatusWait,
               [this, alive = alive_, reason](std::optional<int> status) mutable {
                 if (!*alive) return;
                 if (reason.empty() && status) reason = exit_reason(*status);
                 auto cb = std::move(on_closed_);
                 on_closed_ = nullptr;
                 if (cb) cb(reason);
               });
  }

  static std::string exit_reason(int status) {
    if (WIFSIGNALED(status)) return "ferryd killed by signal " + std::to_string(WTERMSIG(status));
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
      return "ferryd exited with status " + std::to_string(WEXITSTATUS(status));
    return "";
  }

  asio::io_context& io_;
  stream_protocol::socket sock_;
  pid_t pid_;
  std::array<char, std::size_t{256} * 1024> buf_{};
  std::deque<std::string> queue_;
  size_t pending_ = 0;
  bool writing_ = false;
  bool reading_ = false;
  bool started_ = false;
  bool paused_ = false;
  bool closed_ = false;
  DataHandler on_data_;
  ClosedHandler on_closed_;
  // Cleared on destruction: a reap finishing later must not touch this link.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
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
  auto pid = spawn_process(req);
  ::close(sv[1]);
  if (!pid) {
    ::close(sv[0]);
    std::string why = pid.error().message;
    if (why.find("No such file") != std::string::npos)
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
  ifaddrs* raw = nullptr;
  if (::getifaddrs(&raw) != 0) return false;
  std::unique_ptr<ifaddrs, decltype(&::freeifaddrs)> ifs(raw, &::freeifaddrs);
  for (ifaddrs* i = ifs.get(); i; i = i->ifa_next) {
    if (!i->ifa_addr) continue;
    char buf[INET6_ADDRSTRLEN] = {};
    int fam = i->ifa_addr->sa_family;
    if (fam == AF_INET)
      ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, buf, sizeof buf);
    else if (fam == AF_INET6)
      ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr, buf,
                  sizeof buf);
    else
      continue;
    if (name == buf) return true;
  }
  return false;
}

}  // namespace ferry
