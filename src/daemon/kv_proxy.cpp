#include "ferry/daemon/kv_proxy.hpp"

#include <fcntl.h>

#include <algorithm>

#include "ferry/rendezvous/http_request.hpp"
#include "ferry/rendezvous/kv_store.hpp"

namespace ferry {
namespace {

// asio opens sockets without close-on-exec; ranks must not inherit the listener or
// another rank's connection.
void set_cloexec(int fd) {
  int flags = ::fcntl(fd, F_GETFD);
  if (flags >= 0) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

}  // namespace

struct KvProxy::Conn {
  explicit Conn(asio::io_context& io) : socket(io) {}
  asio::ip::tcp::socket socket;
  std::array<char, std::size_t{16} * 1024> buf{};
  HttpRequestParser parser;
  enum class Auth { kUnknown, kOk, kRefused } auth = Auth::kUnknown;
  pid_t pid = -1;          // the authenticated peer
  bool busy = false;       // a request is with the front end, or a reply is being written
  bool keep_alive = true;  // of the request being served
  bool closing = false;
};

KvProxy::KvProxy(asio::io_context& io, Forward forward, Log log)
    : io_(io), acceptor_(io), forward_(std::move(forward)), log_(std::move(log)) {
  identifier_.use_sock_diag(true);
}

KvProxy::~KvProxy() { close(); }

Result<uint16_t> KvProxy::listen() {
  std::error_code ec;
  asio::ip::tcp::endpoint ep(asio::ip::address_v4::loopback(), 0);
  acceptor_.open(ep.protocol(), ec);
  if (!ec) set_cloexec(acceptor_.native_handle());
  if (!ec) acceptor_.bind(ep, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return make_error("KV proxy: cannot listen on 127.0.0.1: " + ec.message());
  uint16_t port = acceptor_.local_endpoint(ec).port();
  if (ec) return make_error("KV proxy: " + ec.message());
  accept();
  return port;
}

void KvProxy::set_secret(std::string secret) {
  if (secret.empty()) return;
  auth_ = std::make_unique<PeerAuthenticator>(identifier_, std::move(secret));
}

void KvProxy::set_candidates(std::vector<pid_t> pids) {
  identifier_.set_candidates(std::move(pids));
}

void KvProxy::close() {
  if (closed_) return;
  closed_ = true;
  std::error_code ignored;
  acceptor_.close(ignored);
  for (auto& w : conns_)
    if (auto c = w.lock()) c->socket.close(ignored);
  conns_.clear();
  pending_.clear();
}

void KvProxy::accept() {
  auto c = std::make_shared<Conn>(io_);
  acceptor_.async_accept(c->socket, [this, c](std::error_code ec) {
    if (closed_ || ec == asio::error::operation_aborted) return;
    if (!ec) {
      set_cloexec(c->socket.native_handle());
      std::error_code ignored;
      c->socket.set_option(asio::ip::tcp::no_delay(true), ignored);
      std::erase_if(conns_, [](const std::weak_ptr<Conn>& w) { return w.expired(); });
      conns_.push_back(c);
      read(c);
    }
    accept();
  });
}

void KvProxy::read(const std::shared_ptr<Conn>& c) {
  c->socket.async_read_some(asio::buffer(c->buf), [this, c](std::error_code ec, size_t n) {
    if (ec || closed_) {
      std::error_code ignored;
      c->socket.close(ignored);
      return;
    }
    c->parser.feed(std::string_view(c->buf.data(), n));
    process(c);
    if (!c->closing) read(c);
  });
}

// Requests on one connection are served one at a time, in order: the next is parsed only
// once the previous reply was written.
void KvProxy::process(const std::shared_ptr<Conn>& c) {
  while (!c->busy && !c->closing) {
    auto req = c->parser.next();
    if (!req) {
      if (c->parser.failed()) {
        const auto& e = *c->parser.error();
        write(c, format_http_response(e.status, e.reason, false), true);
      }
      return;
    }
    if (c->auth == Conn::Auth::kUnknown)
      c->auth = authenticate(*c) ? Conn::Auth::kOk : Conn::Auth::kRefused;
    if (c->auth == Conn::Auth::kRefused) {
      write(c, format_http_response(403, "", false), true);
      return;
    }
    c->busy = true;
    c->keep_alive = req->keep_alive;
    const uint32_t id = next_id_++;
    pending_[id] = c;
    ++forwarded_;
    forward_(
        wire::KvRequest{id, std::move(req->method), std::move(req->target), std::move(req->body)});
  }
}

bool KvProxy::authenticate(Conn& c) {
  std::string why;
  if (!auth_) {
    why = "the job has not started yet";
  } else {
    std::error_code e1, e2;
    auto remote = c.socket.remote_endpoint(e1);
    auto local = c.socket.local_endpoint(e2);
    if (e1 || e2 || !remote.address().is_v4()) {
      why = "not an IPv4 loopback connection";
    } else {
      TcpConnection tc;
      tc.client_addr = remote.address().to_v4().to_uint();
      tc.client_port = remote.port();
      tc.server_addr = local.address().to_v4().to_uint();
      tc.server_port = local.port();
      auto pid = auth_->authenticate(tc);
      if (pid) {
        c.pid = *pid;
        return true;
      }
      why = pid.error().message;
    }
  }
  ++refused_;
  if (log_) log_("KV store: refused a connection (403): " + why);
  return false;
}

void KvProxy::reply(const wire::KvReply& r) {
  auto it = pending_.find(r.id);
  if (it == pending_.end()) return;
  auto c = it->second.lock();
  pending_.erase(it);
  if (!c || closed_) return;
  if (r.status == kStoreFullStatus && store_full_) store_full_(c->pid);
  write(c, format_http_response(r.status, r.body, c->keep_alive), !c->keep_alive);
}

void KvProxy::write(const std::shared_ptr<Conn>& c, std::string bytes, bool then_close) {
  c->busy = true;
  if (then_close) c->closing = true;
  auto data = std::make_shared<std::string>(std::move(bytes));
  asio::async_write(c->socket, asio::buffer(*data),
                    [this, c, data, then_close](std::error_code ec, size_t) {
                      std::error_code ignored;
                      if (ec || then_close) {
                        // Half-close first so the client reads the whole reply, then close.
                        c->socket.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
                        c->socket.close(ignored);
                        return;
                      }
                      c->busy = false;
                      if (!closed_) process(c);
                    });
}

}  // namespace ferry
