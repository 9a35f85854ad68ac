#include "ferry/transport/connect_back.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>

#include "ferry/common/printable.hpp"
#include "ferry/common/random_bytes.hpp"
#include "ferry/common/text.hpp"
#include "libcrypto.hpp"

namespace ferry {

std::string hmac_sha256(std::string_view key, std::string_view data) {
  const libcrypto::Functions& c = libcrypto::get();
  if (!c.have_hmac()) return "";
  unsigned char out[64];
  unsigned int len = 0;
  if (!c.hmac(c.sha256(), key.data(), static_cast<int>(key.size()),
              reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len))
    return "";
  return std::string(reinterpret_cast<char*>(out), len);
}

bool have_hmac() { return libcrypto::get().have_hmac(); }

bool equal_secret(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char d = 0;
  for (size_t i = 0; i < a.size(); ++i) d |= static_cast<unsigned char>(a[i] ^ b[i]);
  return d == 0;
}

std::string ferryd_proof(std::string_view secret, std::string_view nonce_f,
                         std::string_view nonce_d, std::string_view node) {
  return hmac_sha256(secret,
                     "ferryd" + std::string(nonce_f) + std::string(nonce_d) + std::string(node));
}

std::string ferryrun_proof(std::string_view secret, std::string_view nonce_d,
                           std::string_view nonce_f) {
  return hmac_sha256(secret, "ferryrun" + std::string(nonce_d) + std::string(nonce_f));
}

Result<UniqueFd> connect_back(const ConnectBackTarget& target) {
  // The asynchronous handshake on a loop of its own: one implementation of ferryd's side.
  asio::io_context io;
  std::optional<Result<ConnectedBack>> out;
  async_connect_back(io, target, [&](Result<ConnectedBack> r) { out = std::move(r); });
  io.run();
  if (!out) return make_error("cannot reach ferryrun: the handshake did not finish");
  if (!*out) return (*out).error();
  UniqueFd fd = std::move((*out)->fd);
  ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
  return fd;
}

Result<ConnectBackTarget> connect_target_from_environment() {
  ConnectBackTarget t;
  const char* secret = std::getenv(kConnectSecretVar);
  const char* port = std::getenv(kConnectPortVar);
  if (!secret || !*secret || !port) return make_error("not started by ferryrun's Slurm launcher");
  t.secret = secret;
  ::unsetenv(kConnectSecretVar);  // no rank may read it
  const std::string_view digits(port);
  unsigned long value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size() || value < 1 || value > 65535)
    return make_error(std::string(kConnectPortVar) + "='" + printable(digits) +
                      "' is not a port (1 to 65535)");
  t.port = static_cast<uint16_t>(value);
  if (const char* a = std::getenv("SLURM_LAUNCH_NODE_IPADDR"); a && *a) t.addresses.emplace_back(a);
  if (const char* list = std::getenv(kConnectAddrsVar))
    for (const auto& a : split(list, ','))
      if (!a.empty() && (t.addresses.empty() || t.addresses.front() != a))
        t.addresses.emplace_back(a);
  if (const char* n = std::getenv("SLURMD_NODENAME"); n && *n) {
    t.node = n;
  } else {
    char buf[256] = {};
    ::gethostname(buf, sizeof buf - 1);
    t.node = buf;
  }
  if (t.node.size() > kMaxNodeName) t.node.resize(kMaxNodeName);
  return t;
}

namespace {

using asio::ip::tcp;

// ferryd's attempts, one address after another.
class BackConnector : public std::enable_shared_from_this<BackConnector> {
 public:
  BackConnector(asio::io_context& io, ConnectBackTarget t,
                std::function<void(Result<ConnectedBack>)> done)
      : io_(io), t_(std::move(t)), done_(std::move(done)), sock_(io), timer_(io) {}

  void next() {
    if (at_ == t_.addresses.size())
      return finish(make_error("cannot reach ferryrun: " +
                               (problems_.empty() ? std::string("no address") : problems_)));
    where_ = t_.addresses[at_] + ":" + std::to_string(t_.port);
    std::error_code ec;
    const auto addr = asio::ip::make_address_v4(t_.addresses[at_++], ec);
    if (ec) return failed("not an IPv4 address");
    sock_ = tcp::socket(io_);
    sock_.open(tcp::v4(), ec);
    if (ec) return failed(ec.message());
    ::fcntl(sock_.native_handle(), F_SETFD, FD_CLOEXEC);  // before any rank is forked
    timed_out_ = false;
    timer_.expires_after(t_.timeout);
    timer_.async_wait([self = shared_from_this()](std::error_code e) {
      if (e) return;
      self->timed_out_ = true;
      std::error_code ignored;
      self->sock_.close(ignored);
    });
    sock_.async_connect(tcp::endpoint(addr, t_.port),
                        [self = shared_from_this()](std::error_code e) {
                          if (e) return self->failed(e.message());
                          self->greeting();
                        });
  }

 private:
  void greeting() {
    in_.assign(8 + kNonceSize, '\0');
    asio::async_read(sock_, asio::buffer(in_),
                     [self = shared_from_this()](std::error_code e, size_t) {
                       if (e) return self->failed("no greeting from ferryrun");
                       self->answer();
                     });
  }

  void answer() {
    if (in_.compare(0, 8, kConnectMagic) != 0) return failed("not ferryrun");
    nonce_f_ = in_.substr(8);
    auto nonce_d = random_bytes(kNonceSize);
    if (!nonce_d) return failed(nonce_d.error().message);
    nonce_d_ = *nonce_d;
    out_ = std::string(kConnectMagic) + nonce_d_ +
           ferryd_proof(t_.secret, nonce_f_, nonce_d_, t_.node);
    out_.push_back(static_cast<char>(t_.node.size() & 0xff));
    out_ += t_.node;
    asio::async_write(sock_, asio::buffer(out_),
                      [self = shared_from_this()](std::error_code e, size_t) {
                        if (e) return self->failed("connection lost");
                        self->check_proof();
                      });
  }

  void check_proof() {
    in_.assign(kMacSize, '\0');
    asio::async_read(
        sock_, asio::buffer(in_), [self = shared_from_this()](std::error_code e, size_t) {
          if (e) return self->failed("ferryrun refused this ferryd (wrong secret?)");
          if (!equal_secret(self->in_,
                            ferryrun_proof(self->t_.secret, self->nonce_d_, self->nonce_f_)))
            return self->failed("the peer does not know the secret");
          self->timer_.cancel();
          std::error_code ignored;
          self->sock_.set_option(tcp::no_delay(true), ignored);
          self->sock_.non_blocking(true, ignored);
          self->finish(ConnectedBack{UniqueFd(self->sock_.release(ignored)), self->nonce_f_,
                                     self->nonce_d_});
        });
  }

  void failed(const std::string& why) {
    timer_.cancel();
    std::error_code ignored;
    sock_.close(ignored);
    problems_ += (problems_.empty() ? "" : "; ") + where_ + ": " + (timed_out_ ? "timed out" : why);
    next();
  }

  void finish(Result<ConnectedBack> r) {
    auto done = std::move(done_);
    done_ = nullptr;
    if (done) done(std::move(r));
  }

  asio::io_context& io_;
  ConnectBackTarget t_;
  std::function<void(Result<ConnectedBack>)> done_;
  tcp::socket sock_;
  asio::steady_timer timer_;
  size_t at_ = 0;
  bool timed_out_ = false;
  std::string where_, problems_, in_, out_, nonce_f_, nonce_d_;
};

}  // namespace

void async_connect_back(asio::io_context& io, ConnectBackTarget target,
                        std::function<void(Result<ConnectedBack>)> done) {
  if (!have_hmac()) {
    asio::post(io, [done = std::move(done)] {
      done(make_error("cannot load libcrypto.so.3 (OpenSSL): the secret cannot be proved"));
    });
    return;
  }
  auto c = std::make_shared<BackConnector>(io, std::move(target), std::move(done));
  asio::post(io, [c] { c->next(); });
}

void serve_connect_back(asio::io_context& io, const std::shared_ptr<tcp::socket>& s,
                        ConnectBackCheck check, std::function<void(Result<AcceptedBack>)> done) {
  auto nonce = random_bytes(kNonceSize);
  if (!nonce) return done(nonce.error());
  struct State {
    std::string greeting, in, node, proof;
    ConnectBackCheck check;
    std::function<void(Result<AcceptedBack>)> done;
  };
  auto st = std::make_shared<State>();
  st->greeting = std::string(kConnectMagic) + *nonce;
  st->in.assign(8 + kNonceSize + kMacSize + 1, '\0');
  st->check = std::move(check);
  st->done = std::move(done);
  auto timer = std::make_shared<asio::steady_timer>(io, st->check.timeout);
  timer->async_wait([s](std::error_code ec) {
    if (!ec) s->close(ec);
  });
  auto fail = [s, st, timer](const std::string& why) {
    timer->cancel();
    std::error_code ignored;
    s->close(ignored);
    st->done(make_error(why));
  };
  asio::async_write(*s, asio::buffer(st->greeting), [=](std::error_code ec, size_t) {
    if (ec) return fail("lost before the handshake: " + ec.message());
    asio::async_read(*s, asio::buffer(st->in), [=](std::error_code ec, size_t) {
      if (ec) return fail("a connection closed during the handshake: " + ec.message());
      if (st->in.compare(0, 8, kConnectMagic) != 0)
        return fail("a connection that is not a ferryd's");
      st->node.assign(static_cast<unsigned char>(st->in.back()), '\0');
      asio::async_read(*s, asio::buffer(st->node), [=](std::error_code ec, size_t) {
        if (ec) return fail("a connection closed during the handshake: " + ec.message());
        const std::string nonce_f = st->greeting.substr(8);
        const std::string nonce_d = st->in.substr(8, kNonceSize);
        const std::string mac = st->in.substr(8 + kNonceSize, kMacSize);
        auto secret = st->check.secret_of(st->node);
        if (!secret || !equal_secret(mac, ferryd_proof(*secret, nonce_f, nonce_d, st->node)))
          return fail("refused a connection claiming to be ferryd on '" + printable(st->node) +
                      "'");
        st->proof = ferryrun_proof(*secret, nonce_d, nonce_f);
        asio::async_write(*s, asio::buffer(st->proof), [=](std::error_code ec, size_t) {
          if (ec) return fail("connection from ferryd lost: " + ec.message());
          timer->cancel();
          st->done(AcceptedBack{st->node, nonce_f, nonce_d});
        });
      });
    });
  });
}

}  // namespace ferry
