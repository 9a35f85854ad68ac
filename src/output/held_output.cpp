#include "ferry/output/held_output.hpp"

#include <utility>

namespace ferry {

HeldOutput::HeldOutput(OutputSink& inner,
                       std::function<void(StreamId, const std::string&)> print_line, size_t limit)
    : inner_(inner), print_line_(std::move(print_line)), limit_(limit) {}

void HeldOutput::hold() { holding_ = true; }

void HeldOutput::release(const std::string& program) {
  if (!holding_) return;
  holding_ = false;
  auto kept = std::move(kept_);
  kept_.clear();
  kept_bytes_ = 0;
  for (auto& event : kept) event();
  if (dropped_bytes_ > 0) {
    print_line_(StreamId::kStderr,
                program + ": " + std::to_string(dropped_bytes_) +
                    " bytes of output came while the live view was up and were not kept (over " +
                    std::to_string(limit_ >> 20) + " MiB); --output-filename keeps them all\n");
    dropped_bytes_ = 0;
  }
}

void HeldOutput::keep(std::function<void()> event, size_t bytes) {
  kept_bytes_ += bytes;
  kept_.push_back(std::move(event));
}

void HeldOutput::print_line(StreamId stream, const std::string& line) {
  if (!holding_) return print_line_(stream, line);
  keep([this, stream, line] { print_line_(stream, line); }, line.size());
}

void HeldOutput::write(int rank, StreamId stream, std::string_view bytes) {
  if (!holding_) return inner_.write(rank, stream, bytes);
  if (kept_bytes_ + bytes.size() > limit_) {
    dropped_bytes_ += bytes.size();
    return;
  }
  keep([this, rank, stream, b = std::string(bytes)] { inner_.write(rank, stream, b); },
       bytes.size());
}

void HeldOutput::close_stream(int rank, StreamId stream) {
  if (!holding_) return inner_.close_stream(rank, stream);
  keep([this, rank, stream] { inner_.close_stream(rank, stream); }, 0);
}

void HeldOutput::flush() {
  if (!holding_) inner_.flush();
}

void HeldOutput::begin_attempt(int attempt) {
  if (!holding_) return inner_.begin_attempt(attempt);
  keep([this, attempt] { inner_.begin_attempt(attempt); }, 0);
}

void HeldOutput::relabel(int rank, int shown) {
  if (!holding_) return inner_.relabel(rank, shown);
  keep([this, rank, shown] { inner_.relabel(rank, shown); }, 0);
}

void HeldOutput::name_spawned(int id, int spawn, int rank, const std::string& host) {
  if (!holding_) return inner_.name_spawned(id, spawn, rank, host);
  keep([this, id, spawn, rank, host] { inner_.name_spawned(id, spawn, rank, host); }, 0);
}

void HeldOutput::set_flow_handler(std::function<void(bool behind)> handler) {
  inner_.set_flow_handler(std::move(handler));
}

void HeldOutput::set_reader_gone_handler(std::function<void()> handler) {
  inner_.set_reader_gone_handler(std::move(handler));
}

}  // namespace ferry
