#pragma once
/// \file
/// ConsoleOutput's inner parts, shared by its source files: console_output.cpp (the
/// OutputSink calls, buffers and flow), console_lines.cpp (tags and the fd a long line
/// holds) and rank_files.cpp (per-rank files).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
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
  // Progress bars (console_live.cpp).
  bool live = false;           // bars are drawn in place here (a terminal)
  std::size_t width = 80;      // the terminal's columns
  StreamState* bar = nullptr;  // whose bar is drawn
  bool shown = false;          // the bar is on screen now (the cursor is after it)
  bool dirty = false;          // the bar changed, or was erased, since it was drawn
  std::chrono::steady_clock::time_point drawn{};  // when it was drawn last
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
  bool on_console = true;       // --console-ranks shows this rank
  bool bar = false;             // the unfinished line is a progress bar's state
  bool watched = false;         // in ConsoleOutput::partials_
  std::chrono::steady_clock::time_point fed{};  // when the unfinished line got bytes last
  // Bytes written to the console in this second (since window_start) and the one before.
  std::chrono::steady_clock::time_point window_start{};
  std::size_t window_bytes = 0;
  std::size_t last_window_bytes = 0;
};

// Lines waiting to be folded (--fold), oldest first. Each rank's waiting lines form a queue
// in its order; a line several ranks printed leaves only once it heads all their queues.
struct ConsoleOutput::FoldEntry {
  std::string key;         // the stream as one byte, then the line with its '\n'
  std::vector<int> ranks;  // the ranks that printed it, in the order they did
  StreamState* first = nullptr;
  std::chrono::steady_clock::time_point since;
  std::list<FoldEntry>::iterator self;
};

struct ConsoleOutput::Folder {
  std::list<FoldEntry> entries;
  std::unordered_map<std::string_view, std::vector<FoldEntry*>> index;  // key → its entries
  std::vector<std::deque<FoldEntry*>> queues;  // per rank and stream, oldest first
  std::size_t bytes = 0;
  std::size_t shown = 1;  // ranks on the console: a line all of them printed goes at once
};

/// Whether `fd` is a terminal; sets `width` to its columns where it can tell.
bool console_terminal(int fd, std::size_t& width);

// Something else is written to `d`: a bar on screen is erased first (and drawn again).
inline void ConsoleOutput::unshow(Destination& d) {
  if (d.shown) erase_bar(d);
}

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
