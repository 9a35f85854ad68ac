#include "preflight_peer.hpp"

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "ferry/common/interface_addresses.hpp"

namespace ferry {
namespace {

using Clock = std::chrono::steady_clock;
using asio::ip::tcp;

// The names of the errors a connect or read can end in. strerrorname_np would do, but it is
// glibc 2.32 and ferryd runs on 2.31 (cmake/portable.cmake).
std::string errno_name(int err) {
  switch (err) {
    case ECONNREFUSED:
      return "ECONNREFUSED";
    case ETIMEDOUT:
      return "ETIMEDOUT";
    case EHOSTUNREACH:
      return "EHOSTUNREACH";
    case ENETUNREACH:
      return "ENETUNREACH";
    case ECONNRESET:
      return "ECONNRESET";
    case ECONNABORTED:
      return "ECONNABORTED";
    case EADDRNOTAVAIL:
      return "EADDRNOTAVAIL";
    case EADDRINUSE:
      return "EADDRINUSE";
    case ENETDOWN:
      return "ENETDOWN";
    case EPIPE:
      return "EPIPE";
    case EACCES:
      return "EACCES";
    case EPERM:
      return "EPERM";
    case EINVAL:
      return "EINVAL";
    case EMFILE:
      return "EMFILE";
    case ENOBUFS:
      return "ENOBUFS";
    default:
      return "errno " + std::to_string(err);
  }
}

uint32_t ms_since(Clock::time_point t0) {
  return static_cast<uint32_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count());
}

// The local address the kernel would use toward `to` (a UDP connect sends nothing).
std::string source_address(const asio::ip::address& to) {
  asio::io_context io;
  asio::ip::udp::socket s(io);
  std::error_code ec;
  s.open(to.is_v4() ? asio::ip::udp::v4() : asio::ip::udp::v6(), ec);
  if (!ec) s.connect({to, 9}, ec);
  if (ec) return "";
  auto local = s.local_endpoint(ec);
  return ec ? "" : local.address().to_string();
}

}  // namespace

std::string interface_toward(const std::string& address, bool own) {
  std::error_code ec;
  const auto addr = asio::ip::make_address(address, ec);
  if (ec) return "";
  const std::string local = own ? addr.to_string() : source_address(addr);
  auto list = list_interface_addresses();
  if (!list || local.empty()) return "";
  for (const auto& a : *list)
    if (a.address == local) return a.interface;
  return "";
}

PreflightPeer::PreflightPeer(asio::io_context& io, std::function<void(const std::string&)> send)
    : io_(io), send_(std::move(send)) {}

PreflightPeer::~PreflightPeer() { *alive_ = false; }

void PreflightPeer::handle(const wire::Preflight& p) {
  if (p.listen) return listen(p);
  connect(p);
}

void PreflightPeer::close() {
  if (!acceptor_) return;
  std::error_code ec;
  acceptor_->close(ec);
  acceptor_.reset();
}

void PreflightPeer::listen(const wire::Preflight& p) {
  wire::PreflightResult r;
  r.interface = interface_toward(p.address, true);
  std::error_code ec;
  const auto addr = asio::ip::make_address(p.address, ec);
  close();
  if (!ec) {
    acceptor_ = std::make_unique<tcp::acceptor>(io_);
    acceptor_->open(addr.is_v4() ? tcp::v4() : tcp::v6(), ec);
    if (!ec) acceptor_->set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) acceptor_->bind({addr, p.port}, ec);
    if (!ec) acceptor_->listen(asio::socket_base::max_listen_connections, ec);
  }
  if (ec) {
    close();
    r.error = "cannot listen on " + p.address + ":" + std::to_string(p.port) + ": " + ec.message();
    r.reason = errno_name(ec.value());
  } else {
    r.port = acceptor_->local_endpoint(ec).port();
    accept_next();
  }
  send_(wire::encode(r));
}

// Each connection is held until its peer closes it: the peer ends up with the TIME_WAIT, not
// the port the ranks are about to listen on.
void PreflightPeer::accept_next() {
  acceptor_->async_accept([this, alive = alive_](std::error_code ec, tcp::socket s) {
    if (!*alive || ec || !acceptor_) return;
    auto sock = std::make_shared<tcp::socket>(std::move(s));
    auto buf = std::make_shared<std::array<char, 64>>();
    sock->async_read_some(asio::buffer(*buf), [sock, buf](std::error_code, size_t) {});
    accept_next();
  });
}

void PreflightPeer::connect(const wire::Preflight& p) {
  const auto t0 = Clock::now();
  std::error_code ec;
  const auto addr = asio::ip::make_address(p.address, ec);
  if (ec) {
    wire::PreflightResult r;
    r.error = "bad address '" + p.address + "'";
    r.reason = "EINVAL";
    return send_(wire::encode(r));
  }
  auto sock = std::make_shared<tcp::socket>(io_);
  auto timer = std::make_shared<asio::steady_timer>(io_);
  auto timed_out = std::make_shared<bool>(false);
  timer->expires_after(std::chrono::milliseconds(p.timeout_ms));
  timer->async_wait([sock, timed_out](std::error_code e) {
    if (e) return;
    *timed_out = true;
    std::error_code ignored;
    sock->close(ignored);
  });
  sock->async_connect({addr, p.port},
                      [this, alive = alive_, sock, timer, timed_out, t0, p](std::error_code e) {
                        timer->cancel();
                        if (!*alive) return;
                        wire::PreflightResult r;
                        r.interface = interface_toward(p.address, false);
                        r.elapsed_ms = ms_since(t0);
                        if (*timed_out) {
                          char secs[32];
                          std::snprintf(secs, sizeof secs, "%.1f", p.timeout_ms / 1000.0);
                          r.error = std::string("no answer within ") + secs + " s";
                          r.reason = "ETIMEDOUT";
                        } else if (e) {
                          r.error = e.message();
                          r.reason = errno_name(e.value());
                        }
                        std::error_code ignored;
                        sock->close(ignored);
                        send_(wire::encode(r));
                      });
}

}  // namespace ferry
