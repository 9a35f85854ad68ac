#pragma once
/// \file
/// ConsoleOutput's inner parts, shared by its source files: console_output.cpp (the
/// OutputSink calls, buffers and flow), console_lines.cpp (tags and the fd a long line
/// holds) and rank_files.cpp (per-rank files).

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fd_writer.hpp"
#include "ferry/output/console_output.hpp"

namespace ferry {

inline constexpr std::size_t kFileBuffer = std::size_t{16} * 1024;
inline constexpr std::size_t kKeepQueueCapacity = 1 << 20;

inline const char* stream_name(StreamId stream) {
  return stream == StreamId::kStderr ? "stderr" : "stdout";
}

// One console fd: its write buffer, the stream holding it mid-line, and what waits.
struct ConsoleOutput::Destination {
  Destination(int fd, std::size_t buffer) : out(fd, buffer, false) {}
  FdWriter out;
  StreamState* holder = nullptr;
  std::string queue;                  // whole tagged lines of others, held back
  std::vector<StreamState*> waiters;  // streams with an over-cap line, first come first
  bool reported = false;
};

// One (rank, stream).
struct ConsoleOutput::StreamState {
  StreamState(std::size_t cap) : assembler(cap) {}
  int rank = 0;
  StreamId stream = StreamId::kStdout;
  LineAssembler assembler;
  std::string tag;
  Destination* dest = nullptr;
  bool waiting = false;  // in dest->waiters
  enum class File { kNone, kOpen, kClosed, kFailed } file_state = File::kNone;
  std::unique_ptr<FdWriter> file;
  int file_attempt = 0;         // the attempt whose bytes the file holds last
  bool file_line_ended = true;  // the file's last byte is a newline (or it is empty)
};

// Adapts LineAssembler's callbacks to one stream of this ConsoleOutput.
struct ConsoleOutput::Handler {
  ConsoleOutput& c;
  StreamState& s;
  void lines(std::string_view held, std::string_view body) { c.emit_lines(s, held, body); }
  bool overflow(std::string_view held, std::string_view tail) { return c.take(s, held, tail); }
  void more(std::string_view bytes, bool ended) { c.pass(s, bytes, ended); }
  void end_unterminated(std::string_view held, bool mid) { c.end_unterminated(s, held, mid); }
};

}  // namespace ferry
