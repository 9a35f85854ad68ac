#include "ferry/transport/output_route.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <optional>

#include "ferry/common/interface_addresses.hpp"
#include "ferry/common/random_bytes.hpp"
#include "ferry/common/text.hpp"
#include "ferry/transport/connect_back.hpp"
#include "ferry/transport/sealed_records.hpp"

namespace ferry {
namespace {

using asio::ip::tcp;

// One read from a route: up to this much, into the router's scratch buffer, which all its
// routes share (they are read on one thread, one at a time). A route keeps only what a read
// left unopened (at most a record, unless the console or SSH holds it back).
constexpr size_t kRouteRead = size_t{1} << 20;
// How long a ferryd has to finish the handshake once connected.
constexpr auto kHandshakeTimeout = std::chrono::seconds(10);

class RoutedLink;

}  // namespace

class OutputRouter::Impl : public std::enable_shared_from_this<Impl> {
 public:
  Impl(asio::io_context& io, std::function<void(const std::string&)> log)
      : io_(io), log_(std::move(log)) {}
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl() {
    std::error_code ignored;
    for (auto& [a, acc] : acceptors_) acc->close(ignored);
  }

  asio::io_context& io() { return io_; }
  /// The shared read buffer: kRouteRead plus room for a record left over from the last read.
  char* scratch() {
    if (!scratch_) scratch_ = std::make_unique_for_overwrite<char[]>(kScratch);
    return scratch_.get();
  }
  static constexpr size_t kScratch = kRouteRead + kMaxRecord + kRecordHeader + kRecordTag;
  void log(const std::string& line) {
    if (log_) log_(line);
  }

  // Listens on each of `addresses` not listened on yet, on one port for all (the kernel picks
  // it at the first); returns those it listens on. Never the wildcard address: only where the
  // hosts reach this machine.
  Result<std::vector<std::string>> listen(const std::vector<std::string>& addresses) {
    if (!have_record_cipher() || !have_hmac())
      return make_error("cannot load AES-GCM and HMAC from libcrypto.so.3 (OpenSSL)");
    std::vector<std::string> open;
    std::string why;
    for (const auto& a : addresses) {
      if (!acceptors_.contains(a)) {
        std::error_code ec;
        auto addr = asio::ip::make_address_v4(a, ec);
        auto acc = std::make_shared<tcp::acceptor>(io_);
        if (!ec) acc->open(tcp::v4(), ec);
        if (!ec) acc->bind(tcp::endpoint(addr, port_), ec);
        if (!ec) acc->listen(asio::socket_base::max_listen_connections, ec);
        if (ec) {
          why = a + ": " + ec.message();
          continue;
        }
        if (port_ == 0) port_ = acc->local_endpoint(ec).port();
        acceptors_.emplace(a, acc);
        accept(acc);
      }
      open.push_back(a);
    }
    if (open.empty())
      return make_error("cannot listen for output routes" + (why.empty() ? "" : ": " + why));
    return open;
  }

  uint16_t port() const { return port_; }

  void add(const std::string& token, const std::string& secret, RoutedLink* link) {
    waiting_[token] = {secret, link};
  }
  void remove(const std::string& token) { waiting_.erase(token); }

 private:
  void accept(const std::shared_ptr<tcp::acceptor>& acc) {
    acc->async_accept([self = weak_from_this(), acc](std::error_code ec, tcp::socket s) {
      auto me = self.lock();
      if (!me || !acc->is_open()) return;
      if (!ec) me->handshake(std::make_shared<tcp::socket>(std::move(s)));
      me->accept(acc);
    });
  }

  void handshake(const std::shared_ptr<tcp::socket>& s);

  asio::io_context& io_;
  std::function<void(const std::string&)> log_;
  std::map<std::string, std::shared_ptr<tcp::acceptor>> acceptors_;  // by address
  uint16_t port_ = 0;
  struct Waiting {
    std::string secret;
    RoutedLink* link = nullptr;
  };
  std::map<std::string, Waiting> waiting_;  // by token
  std::unique_ptr<char[]> scratch_;
};

namespace {

// The link the job holds: `inner` (SSH) for everything, and ferryd's frames from the route
// once it opened, after the bytes ferryd queued on SSH before it.
class RoutedLink final : public Link {
 public:
  RoutedLink(std::shared_ptr<OutputRouter::Impl> router, std::unique_ptr<Link> inner,
             std::string token)
      : router_(std::move(router)),
        inner_(std::move(inner)),
        token_(std::move(token)),
        side_(router_->io()) {}
  ~RoutedLink() override {
    *alive_ = false;
    router_->remove(token_);
  }
  RoutedLink(const RoutedLink&) = delete;
  RoutedLink& operator=(const RoutedLink&) = delete;

  void start(DataHandler on_data, ClosedHandler on_closed) override {
    on_data_ = std::move(on_data);
    on_closed_ = std::move(on_closed);
    inner_->start([this](std::string_view bytes) { from_ssh(bytes); },
                  [this](const std::string& reason) { ssh_ended(reason); });
  }
  void send(std::string bytes) override { inner_->send(std::move(bytes)); }
  void pause_reading() override {
    paused_ = true;
    inner_->pause_reading();
  }
  void resume_reading() override {
    paused_ = false;
    inner_->resume_reading();
    if (side_open_)
      asio::post(router_->io(), [this, alive = alive_] {
        if (*alive) pump_side();
      });
  }
  void close() override {
    if (closed_) return;
    closed_ = true;
    on_closed_ = nullptr;
    router_->remove(token_);
    inner_->close();
    std::error_code ignored;
    side_.close(ignored);
  }
  std::string peer_address() const override { return inner_->peer_address(); }
  std::string local_address() const override { return inner_->local_address(); }
  std::string describe() const override { return inner_->describe(); }

  // The route's connection passed the handshake, keyed by `opener`.
  void attach(tcp::socket s, RecordOpener opener) {
    router_->remove(token_);
    if (closed_ || ssh_done_) return;  // too late: ferryd is gone, its route with it
    side_ = std::move(s);
    std::error_code ignored;
    side_.non_blocking(true, ignored);  // read_side() reads it directly
    opener_.emplace(std::move(opener));
    side_open_ = true;
    router_->log(inner_->describe() + ": output on a direct route from " + peer_of_side());
    pump_side();
  }

 private:
  std::string peer_of_side() const {
    std::error_code ec;
    auto ep = side_.remote_endpoint(ec);
    return ec ? "?" : ep.address().to_string() + ":" + std::to_string(ep.port());
  }

  void from_ssh(std::string_view bytes) {
    if (closed_) return;
    ssh_seen_ += bytes.size();
    if (boundary_ && ssh_seen_ > *boundary_)
      return fail("ferryd wrote to SSH after its output route opened");
    on_data_(bytes);
    if (!closed_ && boundary_ && ssh_seen_ == *boundary_) pump_side();
  }

  // Opens and delivers what a read left, as far as allowed (the console may pause the link;
  // SSH's bytes come first); reads again once it is all delivered.
  void pump_side() {
    if (!side_open_ || closed_) return;
    const size_t used = open_records(held_.data(), held_.size());
    held_.erase(0, used);
    next_read();
  }

  // Opens the records in `data` in place and delivers each; returns the bytes used. Stops at
  // an unfinished record, or when delivering must wait.
  size_t open_records(char* data, size_t len) {
    size_t at = 0;
    while (side_open_ && !closed_ && !paused_) {
      if (boundary_ && ssh_seen_ < *boundary_) break;  // SSH's bytes first
      std::string_view plain;
      auto took = opener_->open(std::span<char>(data + at, len - at), plain);
      if (!took) {
        fail("output route: " + took.error().message);
        break;
      }
      if (*took == 0) break;
      at += *took;
      if (!boundary_) {
        if (plain.size() != 8) {
          fail("output route: no byte count first");
          break;
        }
        uint64_t n = 0;
        for (char c : plain) n = (n << 8) | static_cast<unsigned char>(c);
        boundary_ = n;
        if (ssh_seen_ > n) fail("ferryd wrote to SSH after its output route opened");
        continue;
      }
      if (!plain.empty()) on_data_(plain);
    }
    return at;
  }

  // Reads again if everything held was delivered (else pump_side() comes back: resume, or
  // SSH caught up), or ends the route at EOF.
  void next_read() {
    if (!side_open_ || closed_ || waiting_read_) return;
    const bool blocked = paused_ || (boundary_ && ssh_seen_ < *boundary_);
    if (side_eof_) {
      if (!blocked) side_ended();
      return;
    }
    if (blocked || held_.size() > kMaxRecord + kRecordHeader + kRecordTag) return;
    waiting_read_ = true;
    side_.async_wait(tcp::socket::wait_read, [this, alive = alive_](std::error_code ec) {
      if (!*alive) return;
      waiting_read_ = false;
      if (closed_ || !side_open_) return;
      if (ec) return broke("output route: " + ec.message());
      read_side();
    });
  }

  // One read into the router's scratch buffer, after what was held; opens what it can and
  // keeps the rest.
  void read_side() {
    char* buf = router_->scratch();
    const size_t have = held_.size();
    std::memcpy(buf, held_.data(), have);
    const ssize_t n = ::read(side_.native_handle(), buf + have, kRouteRead);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return next_read();
    if (n < 0) return broke(std::string("output route: ") + std::strerror(errno));
    if (n == 0) side_eof_ = true;
    const size_t total = have + static_cast<size_t>(n);
    const size_t used = open_records(buf, total);
    if (closed_ || !side_open_) return;
    held_.assign(buf + used, total - used);
    next_read();
  }

  // The connection failed. Before its first record ferryd had not taken it: its handshake
  // gave up (its time ran out as ferryrun's answer was on its way) and closed it, and output
  // goes on over SSH. That is no lost host; a route ferryd did take is.
  void broke(const std::string& why) {
    if (boundary_) return fail(why);
    router_->log(inner_->describe() + ": " + why + " before its first record; output stays on SSH");
    std::error_code ignored;
    side_.close(ignored);
    held_.clear();
    side_open_ = false;
    side_done_ = true;
    if (ssh_done_) report(ssh_reason_);
  }

  // The route reached EOF with nothing left to open.
  void side_ended() {
    if (!held_.empty() && !boundary_) return broke("output route: ended inside its first record");
    if (!held_.empty()) return fail("output route: ended inside a record");
    side_open_ = false;
    side_done_ = true;
    if (ssh_done_) report(ssh_reason_);
  }

  void ssh_ended(const std::string& reason) {
    ssh_done_ = true;
    ssh_reason_ = reason;
    // A failed SSH connection is the host's end; a clean one waits for the route to drain
    // (ferryd exited: the route's EOF follows its last record).
    if (!side_open_ || !reason.empty()) return report(reason);
    if (boundary_ && ssh_seen_ < *boundary_)
      return report("SSH ended before ferryd's output on it did");
  }

  void fail(const std::string& why) { report(why); }

  void report(const std::string& reason) {
    auto cb = std::move(on_closed_);
    on_closed_ = nullptr;
    std::error_code ignored;
    side_.close(ignored);
    side_open_ = false;
    if (cb) cb(reason);
  }

  std::shared_ptr<OutputRouter::Impl> router_;
  std::unique_ptr<Link> inner_;
  std::string token_;
  tcp::socket side_;
  std::optional<RecordOpener> opener_;
  std::string held_;  // read, not yet opened or delivered
  std::optional<uint64_t> boundary_;
  uint64_t ssh_seen_ = 0;
  bool side_open_ = false, side_done_ = false, side_eof_ = false, waiting_read_ = false;
  bool paused_ = false, closed_ = false, ssh_done_ = false;
  std::string ssh_reason_;
  DataHandler on_data_;
  ClosedHandler on_closed_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace

void OutputRouter::Impl::handshake(const std::shared_ptr<tcp::socket>& s) {
  ConnectBackCheck check;
  check.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(kHandshakeTimeout);
  check.secret_of = [self =
                         weak_from_this()](const std::string& token) -> std::optional<std::string> {
    auto me = self.lock();
    if (!me) return std::nullopt;
    auto it = me->waiting_.find(token);
    if (it == me->waiting_.end()) return std::nullopt;
    return it->second.secret;
  };
  serve_connect_back(
      io_, s, std::move(check), [self = weak_from_this(), s](Result<AcceptedBack> r) {
        auto me = self.lock();
        if (!me) return;
        if (!r) return me->log("output route: " + r.error().message);
        auto it = me->waiting_.find(r->node);
        if (it == me->waiting_.end()) return;  // closed meanwhile
        auto opener =
            RecordOpener::create(output_route_key(it->second.secret, r->nonce_f, r->nonce_d));
        if (!opener) return me->log("output route: " + opener.error().message);
        std::error_code ignored;
        s->set_option(tcp::no_delay(true), ignored);
        it->second.link->attach(std::move(*s), std::move(*opener));
      });
}

OutputRouter::OutputRouter(asio::io_context& io, std::function<void(const std::string&)> log)
    : impl_(std::make_shared<Impl>(io, std::move(log))) {}
OutputRouter::~OutputRouter() = default;

std::unique_ptr<Link> OutputRouter::route(std::unique_ptr<Link> inner, Offer& offer,
                                          std::string& problem) {
  auto secret = random_bytes(32);
  auto token = random_bytes(16);
  if (!secret || !token) {
    problem = (secret ? token.error() : secret.error()).message;
    return inner;
  }
  auto addresses = impl_->listen(route_addresses(inner->local_address(), own_ipv4_addresses()));
  if (!addresses) {
    problem = addresses.error().message;
    return inner;
  }
  offer = Offer{};
  offer.addresses = std::move(*addresses);
  offer.port = impl_->port();
  offer.secret = hex_text(*secret);
  offer.token = hex_text(*token);
  auto link = std::make_unique<RoutedLink>(impl_, std::move(inner), offer.token);
  impl_->add(offer.token, offer.secret, link.get());
  return link;
}

std::vector<std::string> route_addresses(const std::string& via,
                                         const std::vector<std::string>& own) {
  // The host reached this machine's sshd-facing address: it can reach it back.
  if (!via.empty() && !via.starts_with("127.")) return {via};
  // Loopback (a container's published port on this machine) or no socket address (a proxy
  // command): the host may be anywhere this machine has an address.
  std::vector<std::string> out;
  if (!via.empty()) out.push_back(via);
  for (const auto& a : own)
    if (a != via) out.push_back(a);
  return out;
}

}  // namespace ferry
