#pragma once
/// \file
/// The console OutputSink: ranks' bytes become whole tagged lines on two fds (stdout and
/// stderr), optionally copied raw into per-rank files.

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/output/line_assembler.hpp"
#include "ferry/output/sink.hpp"

namespace ferry {

/// How console lines are tagged with their rank and stream.
enum class TagStyle {
  kNone,     ///< no tag
  kHorovod,  ///< `[r]<stdout>:` (horovodrun)
  kOpenMpi,  ///< `[1,r]<stdout>:` (Open MPI --tag-output)
  kMpich,    ///< `[r] ` (MPICH -prepend-rank)
  kHost,     ///< `[r@host]<stdout>:` (horovodrun's form with the rank's host name)
};

/// Whether a rank's carriage-return updates (progress bars) are redrawn in place.
enum class LiveBars {
  kAuto,  ///< on where the console fd is a terminal
  kOn,    ///< always (tests)
  kOff,   ///< never: only a bar's final state reaches the console
};

/// Where per-rank files go under OutputOptions::output_dir.
enum class FileLayout {
  kHorovod,  ///< D/rank.<r zero-padded to the digits of np-1>/stdout|stderr
  kOpenMpi,  ///< D/1/rank.<r>/stdout|stderr
};

/// How ConsoleOutput formats and routes output.
struct OutputOptions {
  TagStyle tag = TagStyle::kHorovod;
  /// Prefix each line with the local time in `time.asctime()` form, before the tag.
  bool timestamps = false;
  /// stderr lines go to the stdout fd (still tagged `<stderr>`).
  bool merge_stderr = false;
  /// Number of ranks; sets the zero padding of per-rank file names.
  int world_size = 1;
  /// Prefix of warnings printed without a set_warn() handler (the name the user typed).
  std::string program = "ferryrun";
  /// Directory for per-rank files (raw bytes, no tags); empty = no files.
  std::string output_dir;
  FileLayout layout = FileLayout::kHorovod;
  /// An unfinished line longer than this takes its console fd (see ConsoleOutput).
  std::size_t line_cap = kDefaultLineCap;
  /// Most bytes of other ranks' output held back behind a rank that holds an fd.
  std::size_t queue_cap = std::size_t{64} << 20;
  /// Console write buffer per fd.
  std::size_t buffer_size = std::size_t{256} << 10;
  /// With write_behind(): console bytes waiting for a slow reader before the flow handler
  /// is told to stop reading output; it is told to go on once half of that is left.
  std::size_t behind_limit = std::size_t{8} << 20;
  /// Ranks whose output reaches the console (empty: all); per-rank files get every rank's.
  std::vector<int> console_ranks;
  /// Host name of each rank, for TagStyle::kHost (a rank past the end is tagged `[r]`).
  std::vector<std::string> rank_hosts;
  /// Progress bars redrawn in place (see ConsoleOutput, "Progress bars and prompts").
  LiveBars live_bars = LiveBars::kAuto;
  /// Least time between two redraws of a console fd's live bar.
  std::chrono::milliseconds bar_interval{100};
  /// An unfinished line without '\r' that got no byte for this long is shown (a prompt).
  std::chrono::milliseconds prompt_delay{300};
  /// The same for a stream that got `streaming_bytes` or more within the last second or
  /// the one before: its line's rest is more likely on its way (behind the host's other
  /// output, or a busy machine) than a question waiting for an answer.
  std::chrono::milliseconds streaming_prompt_delay{2000};
  std::size_t streaming_bytes = std::size_t{256} << 10;
  /// --fold: a line that several ranks print alike is printed once, tagged with their ranks.
  bool fold = false;
  /// How long a folded line waits for the other ranks to print it too.
  std::chrono::milliseconds fold_delay{500};
  /// The most bytes of lines waiting to be folded; past it the oldest go out at once.
  std::size_t fold_cap = std::size_t{4} << 20;
};

/// The tag of `rank`'s `stream` in `style`, without timestamp: "[3]<stderr>:"; `host`
/// names the rank's host in TagStyle::kHost ("[3@node2]<stderr>:"; empty: "[3]<stderr>:").
std::string format_tag(TagStyle style, int rank, StreamId stream, std::string_view host = {});
/// The tag of rank `rank` of spawn `spawn` (a process MPI_Comm_spawn started): "[spawn1:0]"
/// where a rank's is "[0]", and Open MPI's "[2,0]" (Open MPI numbers the job's spawns 2, 3, ...
/// after its own job 1).
std::string format_spawned_tag(TagStyle style, int spawn, int rank, StreamId stream,
                               std::string_view host = {});

/// `t` as local time in asctime form without newline: "Sun Nov 22 09:30:39 2026".
std::string format_timestamp(std::time_t t);

/// The per-rank file for `rank`'s `stream` under options.output_dir, per options.layout.
std::string rank_file_path(const OutputOptions& options, int rank, StreamId stream);

/// Writes ranks' output to the console as whole lines, each with its tag, stdout lines to
/// `stdout_fd` and stderr lines to `stderr_fd` (or `stdout_fd` with merge_stderr, or when
/// both fds are the same open file, so that lines cannot tear there either). A line of one
/// rank is never split by bytes of another on the same fd. Single-threaded.
///
/// Output is buffered (OutputOptions::buffer_size per fd) and reaches the fds when a buffer
/// fills or on flush(): callers flush after each batch of reads. Writes loop over partial
/// writes, EINTR and EAGAIN; a failing fd is reported once through the warning hook and its
/// output is dropped from then on. By default writes wait for the fds; after write_behind()
/// nothing here waits for a reader (see there).
///
/// Long lines: an unfinished line that passes OutputOptions::line_cap *holds* its fd: its
/// tag and bytes are written and further bytes pass straight through until its '\n' (or
/// close_stream). Meanwhile other ranks' complete lines for that fd are queued, and written
/// right after the holder's line ends; another rank's own over-cap line waits, and takes
/// the fd next. That held-back output is the only part of memory that grows with the data;
/// when it passes OutputOptions::queue_cap, a '\n' is written to end the holder's fragment,
/// the fd is released, and the holder's continuation starts a new tagged line. No byte is
/// lost: only a line break is inserted, and the warning hook says so (once).
///
/// Progress bars and prompts: the unfinished line of a stream is looked at after each
/// write. When it holds a '\r' with bytes after it (a progress bar's update), only the text
/// after the last such '\r' is kept: earlier states are dropped, so a bar never floods a
/// pipe or a file and its memory stays bounded; the line's final state arrives with its
/// '\n' (or at close_stream) as an ordinary tagged line. On a terminal (LiveBars) the
/// current state of one bar per fd, the lowest rank's, is drawn in place below the lines
/// printed so far, at most once per bar_interval: a line printed meanwhile first erases it
/// ("\r", erase to end of line) and the bar is drawn again after it, so no line is torn.
/// The bar is cut to the terminal's width. An unfinished line without '\r' that got no
/// byte for prompt_delay (a prompt) takes its fd as an over-cap line does, so it is shown;
/// not while the flow handler has stopped the reading (see write_behind()), and only after
/// streaming_prompt_delay amid heavy output or when reading just went on again.
/// Timing runs on the loop given to write_behind(); tick() does it now (tests).
///
/// Folding (OutputOptions::fold): each complete line waits up to fold_delay for other ranks
/// to print the same line on the same stream; it is then printed once with their ranks
/// ("[0-63]<stdout>:", a lone rank's line with its own tag), as soon as every rank shown on
/// the console printed it. Lines leave in the order they first came, except that a line
/// goes only after the earlier lines of each of its ranks, so each rank's lines keep their
/// order (a rank joins a waiting line only where that order can hold). At most fold_cap
/// bytes wait; past it the oldest go out. A stream's end, a long line taking
/// its fd or a prompt first prints every waiting line.
///
/// Per-rank files (when output_dir is set) get each stream's exact bytes, no tags. A file
/// is created on the stream's first bytes or at its close_stream, with directories as
/// needed, and closed at close_stream; file errors produce one warning, then that file's
/// bytes are dropped (the console still gets them).
class ConsoleOutput final : public OutputSink {
 public:
  /// The fds are not owned (not closed). Defaults: the process's stdout and stderr.
  explicit ConsoleOutput(OutputOptions options, int stdout_fd = 1, int stderr_fd = 2);
  /// Ends open lines (as close_stream would), closes files and flushes. The one throw on
  /// its way, asio's timer (arm_timer), is never reached: the timer goes first.
  ~ConsoleOutput() override;  // NOLINT(bugprone-exception-escape)
  ConsoleOutput(const ConsoleOutput&) = delete;
  ConsoleOutput& operator=(const ConsoleOutput&) = delete;

  /// Ranks < 0 are ignored.
  void write(int rank, StreamId stream, std::string_view bytes) override;
  void close_stream(int rank, StreamId stream) override;
  /// Per-rank files are appended to from now on, after a marker line
  /// "--- ferry: attempt N ---" (a file the attempt never writes gets none).
  void begin_attempt(int attempt) override { attempt_ = attempt; }
  /// Lines of `rank` ended from now on carry `shown` in their tag (the host tag keeps the
  /// rank's host); lines already tagged, per-rank files and --output-filename names keep
  /// the number the rank was started with.
  void relabel(int rank, int shown) override;
  void name_spawned(int id, int spawn, int rank, const std::string& host) override;
  /// Writes the console buffers and file buffers out. Lines queued behind a holder stay
  /// queued until the holder's line ends.
  void flush() override;
  /// The error of the first failed write to the console's stdout or stderr fd (an errno
  /// value; 0: none): a detached job's record says why its journal stopped.
  int write_error() const;
  /// Stop and go for the caller's reading, once write_behind() is on (else never called).
  void set_flow_handler(std::function<void(bool behind)> handler) override;
  /// Called once when a write to the stdout fd fails with EPIPE, at the point where errors are
  /// reported (the warning says the job ends instead of "discarded"). Without a handler, an
  /// EPIPE is as any other error: warned about, and that fd's output dropped.
  void set_reader_gone_handler(std::function<void()> handler) override;

  /// From now on a console that stops reading (a full pipe) never blocks the caller's loop
  /// on `io`: flush() writes what the fd takes without waiting for its reader and hands the
  /// rest to a thread of the fd's own, which writes it in order while later bytes queue
  /// behind it. When more than OutputOptions::behind_limit bytes wait, the flow handler
  /// gets true (stop reading rank output), and false from `io` once half of that is left.
  /// The destructor waits until everything is written.
  void write_behind(asio::io_context& io);

  /// Writes one untagged line (a '\n' is added if missing) to the fd of `stream`, as a
  /// whole line: ferry's own diagnostics go through here so they never tear rank lines.
  void print_line(StreamId stream, std::string_view line);

  /// Receives warnings (one line, no newline), called at a consistent point (it may call
  /// flush or print_line). Default, and always from the destructor: print_line to stderr
  /// with a "ferryrun: warning: " prefix.
  void set_warn(std::function<void(const std::string&)> warn);
  /// Supplies the time for timestamps. Default: time(nullptr).
  void set_clock(std::function<std::time_t()> clock);
  /// Supplies the time for bars and prompts. Default: std::chrono::steady_clock::now.
  void set_steady_clock(std::function<std::chrono::steady_clock::time_point()> clock);
  /// Shows prompts and redraws bars that are due now (the loop's timer calls it), then
  /// flushes; returns when it should be called next (time_point::max(): nothing waits).
  std::chrono::steady_clock::time_point tick();

  /// Bytes held in memory and not yet written: unfinished lines, queued lines and write
  /// buffers (console and files), and what waits for the write_behind() threads.
  std::size_t buffered_bytes() const;

 private:
  struct Destination;
  struct StreamState;
  struct Handler;
  struct Folder;
  struct FoldEntry;

  StreamState& state(int rank, StreamId stream);
  std::string tag_of(int rank, StreamId stream) const;
  int shown(int rank) const {
    return static_cast<std::size_t>(rank) < shown_as_.size() ? shown_as_[rank] : rank;
  }
  void emit_lines(StreamState& s, std::string_view held, std::string_view body);
  bool take(StreamState& s, std::string_view held, std::string_view tail);
  void pass(StreamState& s, std::string_view bytes, bool line_ended);
  void end_unterminated(StreamState& s, std::string_view held, bool mid_line);
  void release(Destination& d);
  void enforce_queue_cap(Destination& d);
  static void drop_waiter(StreamState& s);
  void write_file(StreamState& s, std::string_view bytes);
  bool open_file(StreamState& s);
  void file_error(StreamState& s, const std::string& what, int err);
  void refresh_timestamp();
  void report_errors();
  void check_flow();
  void caught_up();
  void warn(const std::string& message);
  // Bars and prompts (console_live.cpp).
  void watch_partial(StreamState& s, std::size_t fed);
  void end_bar(StreamState& s);
  void pick_live(Destination& d);
  inline void unshow(Destination& d);
  void erase_bar(Destination& d);
  void draw(Destination& d, std::chrono::steady_clock::time_point now);
  void draw_due();
  void take_prompt(StreamState& s);
  void count_bytes(StreamState& s, std::size_t n);
  std::chrono::milliseconds prompt_delay(const StreamState& s) const;
  void arm_timer(std::chrono::steady_clock::time_point at);
  std::chrono::steady_clock::time_point now() const;
  // --fold (console_fold.cpp).
  void fold_lines(StreamState& s, std::string_view held, std::string_view body);
  void fold_line(StreamState& s, std::string_view line);
  std::chrono::steady_clock::time_point fold_out(bool all);
  void fold_print(FoldEntry& e);
  bool fold_may_join(const FoldEntry& e, std::size_t queue) const;
  void print_tagged(Destination& d, std::string_view tag, std::string_view line);
  bool on_console(int rank) const {
    return shown_ranks_.empty() ||
           (static_cast<std::size_t>(rank) < shown_ranks_.size() && shown_ranks_[rank]);
  }

  OutputOptions options_;
  std::unique_ptr<Destination> out_;
  std::unique_ptr<Destination> err_;                   // null when stderr lines go to out_
  std::vector<std::unique_ptr<StreamState>> streams_;  // index: 2 * rank + (stderr ? 1 : 0)
  std::function<void(const std::string&)> warn_;
  std::function<std::time_t()> clock_;
  std::string stamp_;  // timestamp text for the current call
  std::time_t stamp_time_ = -1;
  bool file_warned_ = false;
  int attempt_ = 0;
  bool break_warned_ = false;
  std::function<void(bool)> flow_;
  bool behind_ = false;                              // flow_ was told to stop
  std::chrono::steady_clock::time_point resumed_{};  // when it was told to go on last
  std::function<void()> reader_gone_;
  std::vector<bool> shown_ranks_;  // from console_ranks; empty: all
  std::vector<int> shown_as_;      // relabel(): the number in a rank's tag
  struct Spawned {
    int spawn = 0;
    int rank = 0;
    std::string host;
  };
  std::map<int, Spawned> spawned_;      // name_spawned(), by id
  std::vector<StreamState*> partials_;  // streams with an unfinished line to watch
  std::unique_ptr<Folder> fold_;        // with OutputOptions::fold
  bool live_due_ = false;               // a live bar waits to be drawn
  std::function<std::chrono::steady_clock::time_point()> steady_;
  std::unique_ptr<asio::steady_timer> timer_;  // on write_behind()'s loop
  std::chrono::steady_clock::time_point timer_at_ = std::chrono::steady_clock::time_point::max();
  // Lets the writing threads' wake-ups, posted to the loop, find this object or its absence.
  std::shared_ptr<ConsoleOutput*> self_;
};

}  // namespace ferry
