// libFuzzer: ferryrun's half of the connect-back handshake (transport/connect_back.hpp),
// which reads whatever connects to its port: the input is what the peer sends, on a
// socket pair standing in for the TCP connection. Byte 0, bit 0: whether the node the
// peer names has a secret. The handshake must end exactly once, refusing a peer that
// cannot prove the secret (it never can: the nonce is fresh) with a one-line reason
// free of the peer's unprintable bytes.
#include <sys/socket.h>
#include <unistd.h>

#include <asio.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "ferry/transport/connect_back.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  if (in.empty() || in.size() > 64 * 1024) return 0;  // what the socket buffer takes at once
  const bool known = (in[0] & 1) != 0;
  in.remove_prefix(1);
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return 0;
  for (size_t at = 0; at < in.size();) {
    const ssize_t n = ::write(sv[1], in.data() + at, in.size() - at);
    if (n <= 0) break;
    at += static_cast<size_t>(n);
  }
  ::shutdown(sv[1], SHUT_WR);

  asio::io_context io;
  auto sock = std::make_shared<asio::ip::tcp::socket>(io);
  std::error_code ec;
  sock->assign(asio::ip::tcp::v4(), sv[0], ec);
  if (ec) __builtin_trap();
  ferry::ConnectBackCheck check;
  check.secret_of = [known](const std::string&) -> std::optional<std::string> {
    if (!known) return std::nullopt;
    return std::string("the job's secret");
  };
  check.timeout = std::chrono::seconds(5);
  int ends = 0;
  ferry::serve_connect_back(io, sock, check, [&](ferry::Result<ferry::AcceptedBack> r) {
    ++ends;
    if (r) __builtin_trap();  // nobody can answer a fresh nonce without the secret
    const std::string& m = r.error().message;
    if (m.empty()) __builtin_trap();
    for (char c : m)
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e)
        __builtin_trap();
  });
  io.run();
  ::close(sv[1]);
  if (ends != 1) __builtin_trap();
  return 0;
}
