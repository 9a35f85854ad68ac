#pragma once
/// \file
/// A Link over a connected stream socket (a socketpair to a forked ferryd, a TCP connection a
/// ferryd started by srun made back to ferryrun, a warm pool's Unix socket). Reads with flow
/// control, a write queue, and one close report. What happens once the stream ended (waiting
/// for a child's exit status, say) is the subclass's: finish(); a subclass whose stream says
/// itself that it ended (a pool's close frame) ends it with end_with().

#include <asio.hpp>
#include <deque>
#include <memory>
#include <string>
#include <utility>

#include "ferry/common/read_buffer.hpp"
#include "ferry/transport/link.hpp"

namespace ferry {

template <class Protocol>
class SocketLink : public Link {
 public:
  SocketLink(asio::io_context& io, typename Protocol::socket sock)
      : io_(io), sock_(std::move(sock)) {}
  ~SocketLink() override { *alive_ = false; }
  SocketLink(const SocketLink&) = delete;
  SocketLink& operator=(const SocketLink&) = delete;

  void start(DataHandler on_data, ClosedHandler on_closed) override {
    on_data_ = std::move(on_data);
    on_closed_ = std::move(on_closed);
    started_ = true;
    if (!paused_) read();
  }

  void send(std::string bytes) override {
    if (closed_ || write_broken_) return;
    queue_.push_back(std::move(bytes));
    if (!writing_) write_next();
  }

  void pause_reading() override { paused_ = true; }

  void resume_reading() override {
    paused_ = false;
    if (started_ && !reading_ && !closed_) read();
  }

  void close() override {
    on_closed_ = nullptr;  // also silences a report still waiting in finish()
    if (closed_) return;
    closed_ = true;
    std::error_code ignored;
    sock_.close(ignored);
    closed_by_us();
  }

 protected:
  /// The stream ended by itself (`reason` "" for EOF): report through report_closed(), now or
  /// later (the subclass may wait for more facts first).
  virtual void finish(std::string reason) { report_closed(reason); }
  /// close() was called: nothing is reported.
  virtual void closed_by_us() {}

  /// Ends the stream now, as if it had ended by itself with `reason`: the socket is closed
  /// and finish(reason) runs (the close handler may destroy the link: touch nothing after).
  void end_with(std::string reason) { ended(std::move(reason)); }

  void report_closed(const std::string& reason) {
    auto cb = std::move(on_closed_);
    on_closed_ = nullptr;
    if (cb) cb(reason);
  }

  asio::io_context& io_;
  // Cleared on destruction: work finishing later must not touch this link.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);

 private:
  void read() {
    reading_ = true;
    // The link may be gone when a read cancelled by close() completes: check before use.
    sock_.async_read_some(asio::buffer(buf_.data(), buf_.size()),
                          [this, alive = alive_](std::error_code ec, size_t n) {
                            if (!*alive) return;
                            reading_ = false;
                            if (closed_) return;
                            if (ec) return ended(ec == asio::error::eof ? "" : ec.message());
                            on_data_(std::string_view(buf_.data(), n));
                            if (!closed_ && !paused_) read();
                          });
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
                        if (ec) return write_broke();
                        queue_.pop_front();
                        write_next();
                      });
  }

  // The peer stopped reading (ferryd exited, its socket closed): what it was sent is moot.
  // The stream's end is the read side's to report, once every byte the peer wrote before was
  // delivered; a paused link (a console that stopped reading) may still hold some.
  void write_broke() {
    write_broken_ = true;
    writing_ = false;
    queue_.clear();
  }

  void ended(std::string reason) {
    closed_ = true;
    std::error_code ignored;
    sock_.close(ignored);
    finish(std::move(reason));
  }

  typename Protocol::socket sock_;
  ReadBuffer buf_{std::size_t{256} * 1024};
  std::deque<std::string> queue_;
  bool writing_ = false;
  bool reading_ = false;
  bool started_ = false;
  bool paused_ = false;
  bool closed_ = false;
  bool write_broken_ = false;  // a write failed: nothing more is sent
  DataHandler on_data_;
  ClosedHandler on_closed_;
};

}  // namespace ferry
