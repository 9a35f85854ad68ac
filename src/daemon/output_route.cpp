#include "output_route.hpp"

#include <chrono>

#include "ferry/transport/connect_back.hpp"

namespace ferry {
namespace {

// Per address, connect and handshake. Meanwhile output goes on over stdout, so a slow or
// silent address costs no output, only the route.
constexpr auto kRouteTimeout = std::chrono::milliseconds(3000);

}  // namespace

void open_output_route(asio::io_context& io, const wire::OutputRoute& offer,
                       std::function<void(Result<OpenedRoute>)> done) {
  if (!have_record_cipher())
    return asio::post(io, [done = std::move(done)] {
      done(make_error("cannot load AES-GCM from libcrypto.so.3 (OpenSSL)"));
    });
  ConnectBackTarget t;
  t.addresses = offer.addresses;
  t.port = offer.port;
  t.secret = offer.secret;
  t.node = offer.token;
  t.timeout = kRouteTimeout;
  async_connect_back(
      io, std::move(t), [secret = offer.secret, done = std::move(done)](Result<ConnectedBack> c) {
        if (!c) return done(c.error());
        auto sealer = RecordSealer::create(output_route_key(secret, c->nonce_f, c->nonce_d));
        if (!sealer) return done(sealer.error());
        done(OpenedRoute{std::move(c->fd), std::move(*sealer)});
      });
}

std::string route_preamble(uint64_t stdout_bytes) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[7 - i] = static_cast<char>((stdout_bytes >> (8 * i)) & 0xff);
  return out;
}

}  // namespace ferry
