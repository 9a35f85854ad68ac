#pragma once
/// \file
/// Where rank output goes: the console as whole tagged lines, and optionally per-rank files.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace ferry {

/// Which of a rank's streams some bytes came from.
enum class StreamId : uint8_t { kStdout = 1, kStderr = 2 };

/// Receives raw bytes of each rank's streams, in arrival order, and writes them out as whole
/// lines. Implementations never split one line of one rank with bytes of another.
class OutputSink {
 public:
  virtual ~OutputSink() = default;
  /// Bytes read from `rank`'s `stream`; any size, any content (binary included).
  virtual void write(int rank, StreamId stream, std::string_view bytes) = 0;
  /// The stream ended: a last partial line is flushed (a newline is added on the console).
  virtual void close_stream(int rank, StreamId stream) = 0;
  /// Flushes buffered console and file output.
  virtual void flush() = 0;
  /// The job runs again (attempt 1, 2, ...): every stream closed before; ranks write anew.
  virtual void begin_attempt(int attempt) { (void)attempt; }
  /// horovodrun's elastic mode: the worker whose bytes arrive as `rank` (the number it was
  /// started with) now holds rank `shown` in the job's world; the lines it ends from now on
  /// are tagged with `shown`. A sink without tags ignores it.
  virtual void relabel(int rank, int shown) {
    (void)rank;
    (void)shown;
  }
  /// A process MPI_Comm_spawn started arrives as `id` (past the world's ranks): it is rank
  /// `rank` of the job's spawn number `spawn` (1, 2, ...), on host `host`, and its lines say
  /// so. A sink without tags ignores it.
  virtual void name_spawned(int id, int spawn, int rank, const std::string& host) {
    (void)id;
    (void)spawn;
    (void)rank;
    (void)host;
  }
  /// Flow control: the sink calls `handler(true)` when more output waits for its readers
  /// than it wants to hold (the caller should stop reading rank output) and
  /// `handler(false)` once it caught up. A sink that never falls behind never calls it.
  // By value, so that an override keeps the handler by moving it; this default drops it.
  // NOLINTNEXTLINE(performance-unnecessary-value-param)
  virtual void set_flow_handler(std::function<void(bool behind)> /*handler*/) {}
  /// The reader of the output went away (the console's stdout is a broken pipe, as in
  /// `ferryrun ... | head`): the sink calls `handler` once; the caller should end the job.
  /// A sink without such a reader never calls it.
  // NOLINTNEXTLINE(performance-unnecessary-value-param)
  virtual void set_reader_gone_handler(std::function<void()> /*handler*/) {}
};

}  // namespace ferry
