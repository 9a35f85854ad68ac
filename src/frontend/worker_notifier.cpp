#include "worker_notifier.hpp"

#include <array>
#include <chrono>
#include <memory>

namespace ferry {
namespace {

struct Delivery : std::enable_shared_from_this<Delivery> {
  Delivery(asio::io_context& io, std::vector<std::pair<std::string, int>> a, std::string m,
           std::function<void(const std::string&)> d)
      : socket(io), timer(io), addresses(std::move(a)), message(std::move(m)), done(std::move(d)) {}

  void try_next() {
    if (next >= addresses.size()) return finish("no address of the worker answered");
    const auto& [ip, port] = addresses[next++];
    std::error_code ec;
    const auto addr = asio::ip::make_address(ip, ec);
    if (ec) return try_next();
    std::error_code ignored;
    socket.close(ignored);
    timer.expires_after(std::chrono::seconds(5));
    timer.async_wait([self = shared_from_this()](std::error_code e) {
      if (!e) {
        std::error_code ig;
        self->socket.close(ig);
      }
    });
    socket.async_connect({addr, static_cast<uint16_t>(port)},
                         [self = shared_from_this()](std::error_code e) {
                           if (e) return self->try_next();
                           self->write();
                         });
  }

  void write() {
    asio::async_write(socket, asio::buffer(message),
                      [self = shared_from_this()](std::error_code e, size_t) {
                        if (e) return self->try_next();
                        self->read();
                      });
  }

  // The service answers with an acknowledgement; any bytes or its close end the exchange.
  void read() {
    socket.async_read_some(asio::buffer(buf), [self = shared_from_this()](std::error_code, size_t) {
      self->finish("");
    });
  }

  void finish(const std::string& why) {
    timer.cancel();
    std::error_code ignored;
    socket.close(ignored);
    if (done) std::exchange(done, nullptr)(why);
  }

  asio::ip::tcp::socket socket;
  asio::steady_timer timer;
  std::vector<std::pair<std::string, int>> addresses;
  std::string message;
  std::function<void(const std::string&)> done;
  size_t next = 0;
  std::array<char, 256> buf{};
};

}  // namespace

void send_service_message(asio::io_context& io, std::vector<std::pair<std::string, int>> addresses,
                          std::string message, std::function<void(const std::string&)> done) {
  std::make_shared<Delivery>(io, std::move(addresses), std::move(message), std::move(done))
      ->try_next();
}

}  // namespace ferry
