#pragma once
/// \file
/// ferryrun's stdin, read on a thread (asio cannot poll regular files) and handed to the
/// event loop in chunks, with a bound on what is in flight to the stdin rank's host.

#include <asio.hpp>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace ferry {

/// Reads `fd` until EOF and passes each chunk to `send` on the loop; an empty chunk
/// means EOF. At most `window` bytes are passed on and not yet acknowledged(): a rank
/// that does not read its stdin holds the reading back, so neither ferryrun nor ferryd
/// buffers an unbounded stream.
class StdinForwarder {
 public:
  using Send = std::function<void(std::string chunk)>;

  StdinForwarder(asio::io_context& io, int fd, size_t window, Send send);
  /// Stops; a thread blocked in read() leaves at its next input or EOF, sending nothing.
  ~StdinForwarder();
  StdinForwarder(const StdinForwarder&) = delete;
  StdinForwarder& operator=(const StdinForwarder&) = delete;

  void start();
  /// The receiver wrote or dropped `bytes` of what was sent (loop thread).
  void acknowledged(size_t bytes);
  /// Nothing more is sent; the reading thread is released from its window wait.
  void stop();

 private:
  struct Shared;
  asio::io_context& io_;
  int fd_;
  size_t window_;
  std::shared_ptr<Shared> shared_;
};

}  // namespace ferry
