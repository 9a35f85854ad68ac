// A job's hosts through a warm pool: the request on the pool's socket, and the link that
// carries the job's stream from there.
#include "ferry/pool/pool_launcher.hpp"

#include <unistd.h>

#include <array>
#include <asio.hpp>
#include <deque>
#include <map>

#include "ferry/common/text.hpp"
#include "ferry/pool/mux.hpp"
#include "ferry/pool/pool_dir.hpp"

namespace ferry {

namespace {

using asio::local::stream_protocol;

std::string dash_empty(const std::string& s) { return s == "-" ? "" : s; }

// The pool's connection as a link to one host's ferryd: mux frames on stream 0 come in
// (ferryd's stdout, its stderr, the stream's end), ferryd's stdin goes out as it is.
class PoolLink final : public Link {
 public:
  PoolLink(stream_protocol::socket sock, const std::string& early, std::string peer,
           std::string local, std::string describe,
           std::function<void(const std::string&)> on_stderr)
      : sock_(std::move(sock)),
        peer_(std::move(peer)),
        local_(std::move(local)),
        describe_(std::move(describe)),
        on_stderr_(std::move(on_stderr)) {
    reader_.feed(early);
  }
  ~PoolLink() override {
    *alive_ = false;
    close();
  }
  PoolLink(const PoolLink&) = delete;
  PoolLink& operator=(const PoolLink&) = delete;

  void start(DataHandler on_data, ClosedHandler on_closed) override {
    on_data_ = std::move(on_data);
    on_closed_ = std::move(on_closed);
    started_ = true;
    auto alive = alive_;
    if (!deliver() || !*alive) return;
    if (!paused_) read();
  }

  void send(std::string bytes) override {
    if (closed_ || broken_) return;
    queue_.push_back(std::move(bytes));
    if (!writing_) write_next();
  }

  void pause_reading() override { paused_ = true; }
  void resume_reading() override {
    paused_ = false;
    if (started_ && !reading_ && !closed_) read();
  }

  void close() override {
    on_closed_ = nullptr;
    if (closed_) return;
    closed_ = true;
    std::error_code ignored;
    sock_.close(ignored);
  }

  std::string peer_address() const override { return peer_; }
  std::string local_address() const override { return local_; }
  std::string describe() const override { return describe_; }
  bool relays_output() const override { return true; }

 private:
  void read() {
    reading_ = true;
    sock_.async_read_some(asio::buffer(buf_), [this, alive = alive_](std::error_code ec, size_t n) {
      if (!*alive) return;
      reading_ = false;
      if (closed_) return;
      if (ec)
        return ended(ec == asio::error::eof ? "the warm pool's connection ended (the pool "
                                              "process is gone)"
                                            : "the warm pool's connection: " + ec.message());
      reader_.feed(std::string_view(buf_.data(), n));
      if (!deliver() || !*alive || closed_) return;
      if (!paused_) read();
    });
  }

  // Hands on every whole frame; false once the stream ended (or the link went away).
  bool deliver() {
    auto alive = alive_;
    for (;;) {
      auto f = reader_.next();
      if (!f) {
        ended(f.error().message);
        return false;
      }
      if (!*f) return true;
      MuxFrame& frame = **f;
      switch (frame.type) {
        case MuxType::kData:
          on_data_(frame.payload);
          if (!*alive || closed_) return false;
          break;
        case MuxType::kStderr:
          stderr_lines(frame.payload);
          break;
        case MuxType::kClose:
          ended(frame.payload);
          return false;
        default:
          break;
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

  void write_next() {
    if (queue_.empty() || closed_) {
      writing_ = false;
      return;
    }
    writing_ = true;
    asio::async_write(sock_, asio::buffer(queue_.front()),
                      [this, alive = alive_](std::error_code ec, size_t) {
                        if (!*alive || closed_) return;
                        if (ec) {
                          broken_ = true;
                          writing_ = false;
                          queue_.clear();
                          return;
                        }
                        queue_.pop_front();
                        write_next();
                      });
  }

  void ended(const std::string& reason) {
    closed_ = true;
    std::error_code ignored;
    sock_.close(ignored);
    auto cb = std::move(on_closed_);
    on_closed_ = nullptr;
    if (cb) cb(reason);
  }

  stream_protocol::socket sock_;
  std::string peer_, local_, describe_;
  std::function<void(const std::string&)> on_stderr_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  MuxReader reader_;
  std::array<char, std::size_t{256} * 1024> buf_{};
  std::deque<std::string> queue_;
  std::string partial_;
  bool writing_ = false, reading_ = false, started_ = false, paused_ = false, closed_ = false,
       broken_ = false;
  DataHandler on_data_;
  ClosedHandler on_closed_;
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
                const auto w = split(line, ' ');
                if (w.size() < 5 || w[0] != "ok") {
                  std::string why = line.rfind("no ", 0) == 0 ? line.substr(3) : line;
                  return fall_back(host, cmd, std::move(handler), why);
                }
                std::string early(asio::buffers_begin(p->answer.data()),
                                  asio::buffers_end(p->answer.data()));
                if (verbose_)
                  verbose_(host.name + ": through pool " + route_.name + " (" + w[4] +
                           (w[4] == "repaired"
                                ? ": its ferryd there had ended and was started again"
                                : ", no SSH") +
                           ")");
                std::function<void(const std::string&)> on_stderr = cmd.on_stderr;
                std::unique_ptr<Link> link = std::make_unique<PoolLink>(
                    std::move(p->sock), std::move(early), dash_empty(w[1]), dash_empty(w[2]),
                    dash_empty(w[3]), std::move(on_stderr));
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
