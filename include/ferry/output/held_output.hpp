#pragma once
/// \file
/// A console that can be held: while `ferryrun --top` covers the terminal, rank output and
/// ferry's own lines are kept (up to a limit) instead of printed, and printed in order once
/// the view is left or the job ends. Past the limit output is dropped, and how much is said
/// in one line when the console comes back.

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "ferry/output/sink.hpp"

namespace ferry {

class HeldOutput final : public OutputSink {
 public:
  static constexpr size_t kDefaultLimit = size_t{16} << 20;

  /// Forwards to `inner`; ferry's own lines go to `print_line` (the console's).
  HeldOutput(OutputSink& inner, std::function<void(StreamId, const std::string&)> print_line,
             size_t limit = kDefaultLimit);

  /// From now on everything is kept.
  void hold();
  /// Prints what was kept, in order, and forwards from now on. `program` starts the line that
  /// says what was dropped.
  void release(const std::string& program);
  bool holding() const { return holding_; }
  /// One of ferry's own lines (a whole line, with its newline).
  void print_line(StreamId stream, const std::string& line);

  void write(int rank, StreamId stream, std::string_view bytes) override;
  void close_stream(int rank, StreamId stream) override;
  void flush() override;
  void begin_attempt(int attempt) override;
  void relabel(int rank, int shown) override;
  void name_spawned(int id, int spawn, int rank, const std::string& host) override;
  void set_flow_handler(std::function<void(bool behind)> handler) override;
  void set_reader_gone_handler(std::function<void()> handler) override;

 private:
  void keep(std::function<void()> event, size_t bytes);

  OutputSink& inner_;
  std::function<void(StreamId, const std::string&)> print_line_;
  size_t limit_;
  bool holding_ = false;
  std::vector<std::function<void()>> kept_;
  size_t kept_bytes_ = 0;
  size_t dropped_bytes_ = 0;
};

}  // namespace ferry
