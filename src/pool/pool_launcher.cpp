// A job's hosts through a warm pool: the request on the pool's socket, and the link that
// carries the job's stream from there.
#include "ferry/pool/pool_launcher.hpp"

#include <unistd.h>

#include <array>
#include <asio.hpp>
#include <deque>
#include <map>

#include "ferry/pool/mux.hpp"
#include "ferry/pool/pool_dir.hpp"
#include "ferry/transport/socket_link.hpp"

namespace ferry {

namespace {

using asio::local::stream_protocol;

// The pool's connection as a link to one host's ferryd: mux frames on stream 0 come in
// (ferryd's stdout, its stderr, the stream's end), ferryd's stdin goes out as it is.
class PoolLink final : public SocketLink<stream_protocol> {
 public:
  PoolLink(asio::io_context& io, stream_protocol::socket sock, const std::string& early,
           std::string peer, std::string local, std::string describe,
           std::function<void(const std::string&)> on_stderr)
      : SocketLink(io, std::move(sock)),
        peer_(std::move(peer)),
        local_(std::move(local)),
        describe_(std::move(describe)),
        on_stderr_(std::move(on_stderr)) {
    reader_.feed(early);
  }
  ~PoolLink() override { close(); }
  PoolLink(const PoolLink&) = delete;
  PoolLink& operator=(const PoolLink&) = delete;

  void start(DataHandler on_data, ClosedHandler on_closed) override {
    on_ferryd_ = std::move(on_data);
    SocketLink::start([this](std::string_view bytes) { frames(bytes); }, std::move(on_closed));
    // What came with the pool's answer, after start() returned (as any link's first bytes).
    asio::post(io_, [this, alive = alive_] {
      if (*alive) frames("");
    });
  }

  std::string peer_address() const override { return peer_; }
  std::string local_address() const override { return local_; }
  std::string describe() const override { return describe_; }
  bool relays_output() const override { return true; }

 private:
  // The socket ended without the pool's close frame: the pool process is gone.
  void finish(std::string reason) override {
    if (by_frame_) return report_closed(reason);  // the host's own reason, "" for a clean end
    report_closed(reason.empty() ? "the warm pool's connection ended (the pool process is gone)"
                                 : "the warm pool's connection: " + reason);
  }

  void frames(std::string_view bytes) {
    reader_.feed(bytes);
    auto alive = alive_;
    for (;;) {
      auto f = reader_.next();
      if (!f) return end_with(f.error().message);
      if (!*f) return;
      MuxFrame& frame = **f;
      if (frame.type == MuxType::kData) {
        on_ferryd_(frame.payload);
        if (!*alive) return;
      } else if (frame.type == MuxType::kStderr) {
        stderr_lines(frame.payload);
      } else if (frame.type == MuxType::kClose) {
        by_frame_ = true;
        return end_with(frame.payload);
      }
    }
  }

  void stderr_lines(std::string_view bytes) {
    partial_.append(bytes);
    size_t nl = 0;
    while ((nl = partial_.find('\n')) != std::string::npos) {
      std::string line = partial_.substr(0, nl);
      partial_.erase(0, nl + 1);
      if (!line.empty() && on_stderr_) on_stderr_(line);
    }
  }

  std::string peer_, local_, describe_;
  std::function<void(const std::string&)> on_stderr_;
  DataHandler on_ferryd_;
  MuxReader reader_;
  std::string partial_;
  bool by_frame_ = false;  // the pool's close frame ended the stream
};

}  // namespace

struct PoolLauncher::Pending {
  explicit Pending(asio::io_context& io) : sock(io) {}
  stream_protocol::socket sock;
  asio::streambuf answer{4096};
  std::string request;
  bool cancelled = false;
};

Result<std::optional<PoolRoute>> find_pool(const std::string& pools_dir, const std::string& name,
                                           const std::vector<std::string>& keys) {
  std::optional<PoolRoute> best;
  size_t best_count = 0;
  for (const PoolEntry& p : list_pools(pools_dir)) {
    if (!name.empty() && p.name != name) continue;
    // A pool killed leaves its socket behind: only one that answers counts.
    if (::access((p.dir + "/" + kPoolSocketName).c_str(), F_OK) != 0 || !connect_pool(p.dir))
      continue;
    const std::set<std::string> served(p.keys.begin(), p.keys.end());
    size_t count = 0;
    for (const auto& k : keys) count += served.count(k);
    if (!name.empty() || count > best_count) {
      best = PoolRoute{p.name, p.dir, served, 0, ""};
      best_count = count;
    }
  }
  if (!name.empty() && !best)
    return make_error("--pool " + name + ": no such pool runs (start it with 'ferry up --name " +
                      name + " ...'; 'ferry pools' lists them)");
  return best;
}

PoolLauncher::PoolLauncher(asio::io_context& io, PoolRoute route, Launcher& fallback,
                           std::string label, std::function<void(const std::string&)> verbose)
    : io_(io),
      route_(std::move(route)),
      fallback_(fallback),
      label_(std::move(label)),
      verbose_(std::move(verbose)) {}

PoolLauncher::~PoolLauncher() {
  for (auto& w : pending_)
    if (auto p = w.lock()) {
      p->cancelled = true;
      std::error_code ignored;
      p->sock.close(ignored);
    }
}

void PoolLauncher::fall_back(const HostEntry& host, const DaemonCommand& cmd, OpenHandler handler,
                             const std::string& why) {
  if (verbose_) verbose_(host.name + ": pool " + route_.name + ": " + why + "; reached directly");
  fallback_.async_open(host, cmd, std::move(handler));
}

void PoolLauncher::async_open(const HostEntry& host, const DaemonCommand& cmd,
                              OpenHandler handler) {
  const std::string key = pool_host_key(host, route_.default_port, route_.default_user);
  if (!route_.keys.contains(key)) return fallback_.async_open(host, cmd, std::move(handler));
  auto p = std::make_shared<Pending>(io_);
  std::erase_if(pending_, [](const std::weak_ptr<Pending>& w) { return w.expired(); });
  pending_.push_back(p);
  p->request = "open " + key + " " + label_ + "\n";
  const std::string path = route_.dir + "/" + kPoolSocketName;
  p->sock.async_connect(stream_protocol::endpoint(path), [this, p, host, cmd,
                                                          handler = std::move(handler)](
                                                             std::error_code ec) mutable {
    if (p->cancelled) return handler(make_error(host.name + ": cancelled"));
    if (ec) return fall_back(host, cmd, std::move(handler), "no answer (" + ec.message() + ")");
    asio::async_write(
        p->sock, asio::buffer(p->request),
        [this, p, host, cmd, handler = std::move(handler)](std::error_code ec2, size_t) mutable {
          if (p->cancelled) return handler(make_error(host.name + ": cancelled"));
          if (ec2) return fall_back(host, cmd, std::move(handler), ec2.message());
          asio::async_read_until(
              p->sock, p->answer, '\n',
              [this, p, host, cmd, handler = std::move(handler)](std::error_code ec3,
                                                                 size_t n) mutable {
                if (p->cancelled) return handler(make_error(host.name + ": cancelled"));
                if (ec3)
                  return fall_back(host, cmd, std::move(handler),
                                   "no answer (" + ec3.message() + ")");
                std::string line(
                    asio::buffers_begin(p->answer.data()),
                    asio::buffers_begin(p->answer.data()) + static_cast<std::ptrdiff_t>(n - 1));
                p->answer.consume(n);
                const auto answer = parse_open_answer(line);
                if (!answer) {
                  std::string why = line.rfind("no ", 0) == 0 ? line.substr(3) : line;
                  return fall_back(host, cmd, std::move(handler), why);
                }
                std::string early(asio::buffers_begin(p->answer.data()),
                                  asio::buffers_end(p->answer.data()));
                if (verbose_)
                  verbose_(host.name + ": through pool " + route_.name + " (" + answer->how +
                           (answer->how == "repaired"
                                ? ": its ferryd there had ended and was started again"
                                : ", no SSH") +
                           ")");
                std::function<void(const std::string&)> on_stderr = cmd.on_stderr;
                std::unique_ptr<Link> link = std::make_unique<PoolLink>(
                    io_, std::move(p->sock), std::move(early), answer->peer, answer->local,
                    answer->describe, std::move(on_stderr));
                handler(std::move(link));
              });
        });
  });
}

void PoolLauncher::cancel_all() {
  for (auto& w : pending_)
    if (auto p = w.lock()) {
      p->cancelled = true;
      std::error_code ignored;
      p->sock.cancel(ignored);
    }
  pending_.clear();
  fallback_.cancel_all();
}

}  // namespace ferry
