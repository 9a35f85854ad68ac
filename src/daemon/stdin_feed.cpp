#include "stdin_feed.hpp"

#include <utility>

namespace ferry {

StdinFeed::StdinFeed(asio::io_context& io, std::function<void(size_t)> ack)
    : ack_(std::move(ack)), pipe_(io) {}

void StdinFeed::feed(std::string data) {
  if (state_ == State::kClosed) {
    if (!data.empty()) ack_(data.size());
    return;
  }
  if (data.empty())
    eof_ = true;
  else
    queue_.push_back(std::move(data));
  write_next();
}

void StdinFeed::attach(UniqueFd pipe) {
  if (state_ != State::kHolding) return;  // closed before the rank started: `pipe` closes
  pipe_.assign(pipe.release());
  state_ = State::kWriting;
  write_next();
}

void StdinFeed::close() {
  state_ = State::kClosed;
  if (!writing_) drop_queued();  // else the cancelled write's handler drops the rest
  std::error_code ignored;
  pipe_.close(ignored);
}

void StdinFeed::write_next() {
  if (state_ != State::kWriting || writing_) return;
  if (queue_.empty()) {
    if (eof_) close();  // the rank reads EOF once it has read everything
    return;
  }
  writing_ = true;
  asio::async_write(pipe_, asio::buffer(queue_.front()), [this](std::error_code ec, size_t) {
    writing_ = false;
    if (ec) {  // the rank closed its stdin or ended (or close() cancelled the write)
      close();
      return;
    }
    ack_(queue_.front().size());
    queue_.pop_front();
    write_next();
  });
}

void StdinFeed::drop_queued() {
  size_t bytes = 0;
  for (auto& chunk : queue_) bytes += chunk.size();
  queue_.clear();
  if (bytes > 0) ack_(bytes);
}

}  // namespace ferry
