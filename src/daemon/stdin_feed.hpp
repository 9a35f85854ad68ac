#pragma once
// ferryd's end of the job's stdin: the Stdin frames for the stdin rank, written to its
// stdin pipe. Every byte is acknowledged once written or dropped (StdinAck): the front end
// keeps only a window of unacknowledged bytes in flight, so a rank that does not read its
// stdin holds ferryrun's reading back instead of filling ferryd's memory.

#include <asio.hpp>
#include <cstddef>
#include <deque>
#include <functional>
#include <string>

#include "ferry/process/unique_fd.hpp"

namespace ferry {

class StdinFeed {
 public:
  /// `ack(bytes)`: that many bytes were written to the rank or dropped.
  StdinFeed(asio::io_context& io, std::function<void(size_t)> ack);
  ~StdinFeed() = default;
  StdinFeed(const StdinFeed&) = delete;
  StdinFeed& operator=(const StdinFeed&) = delete;

  /// Bytes from the front end; empty means EOF. Until the stdin rank started they are kept
  /// (they may come before the HostSpec, or while the ranks are being started).
  void feed(std::string data);
  /// The stdin rank started: `pipe` (the write end of its stdin) gets what was kept, and
  /// what comes next.
  void attach(UniqueFd pipe);
  /// No stdin rank will read any more (none on this host, it could not start, or it
  /// ended): what is kept and what comes is dropped, and acknowledged.
  void close();

 private:
  enum class State {
    kHolding,  // the stdin rank has not started: keep
    kWriting,  // the stdin rank's pipe is open
    kClosed,   // nobody reads: drop
  };

  void write_next();
  void drop_queued();

  std::function<void(size_t)> ack_;
  asio::posix::stream_descriptor pipe_;
  State state_ = State::kHolding;
  std::deque<std::string> queue_;
  bool eof_ = false;      // EOF came: close the pipe once the queue is written
  bool writing_ = false;  // a write of queue_.front() is under way
};

}  // namespace ferry
