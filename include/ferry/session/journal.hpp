#pragma once
/// \file
/// A job's journal: the console stream (stdout and stderr as the terminal would have shown
/// them, interleaved) kept in the job's directory, bounded in size. It is two files:
/// `console.log`, being written, and `console.1.log`, the segment before it. A segment
/// ends at the first line end at or past half the bound; `console.log` then becomes
/// `console.1.log` (the older segment is dropped, its size counted); so the journal holds
/// at most the bound plus a line, always the newest lines, never a cut line at a segment's
/// start (a line without an end is never cut either: its segment grows until it ends). A failed
/// write (a full disk) stops the journal, never its writer.
///
/// JournalPump moves a front end's console into the journal on a thread of its own: fds 1
/// and 2 become a pipe it drains at once, so no rank ever waits on the disk or on a viewer.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "ferry/common/posix_handles.hpp"
#include "ferry/common/result.hpp"

namespace ferry {

inline constexpr const char* kJournalFile = "console.log";
inline constexpr const char* kJournalOlderFile = "console.1.log";
/// Beside them: the bytes rotation dropped so far, and why writing stopped (if it did).
inline constexpr const char* kJournalDroppedFile = "journal.dropped";
inline constexpr const char* kJournalErrorFile = "journal.error";

class Journal {
 public:
  /// Opens (creates, 0600) `dir`/console.log to append to. `max_bytes` bounds both segments
  /// together; 0: no bound. Error: one line naming the file.
  static Result<Journal> open(const std::string& dir, uint64_t max_bytes);

  /// Appends `data`, rotating first when due. After a failed write nothing more is written
  /// (error() says why).
  void write(std::string_view data);

  const std::string& error() const { return error_; }
  /// Bytes of older output dropped by rotation.
  uint64_t dropped() const { return dropped_; }

 private:
  Journal(std::string dir, uint64_t max_bytes, UniqueFd fd, uint64_t size);
  void rotate();
  void write_raw(std::string_view data);

  std::string dir_;
  uint64_t max_ = 0;
  UniqueFd fd_;
  uint64_t size_ = 0;  // of console.log
  uint64_t dropped_ = 0;
  bool at_line_start_ = true;
  std::string error_;
};

/// The whole journal of `dir` (older segment first); "" when there is none.
std::string read_journal(const std::string& dir);

/// The bytes of older output the journal of `dir` dropped so far (0: none).
uint64_t journal_dropped(const std::string& dir);

/// The last `lines` lines of `text` (all of it when it has fewer).
std::string_view last_lines(std::string_view text, size_t lines);

/// Whether console line `line` is rank `rank`'s under any of ferry's tag styles: "[R]<",
/// "[1,R]<", "[R@" or "[R] ".
bool is_rank_line(std::string_view line, int rank);

/// Reads a journal as it grows, across rotations: each call to poll() returns what was
/// appended since the last one, so that nothing is read twice or missed.
class JournalFollower {
 public:
  /// Starts at the journal's current end; `from_start`: at its beginning (the first poll()
  /// returns the whole journal, the older segment first).
  JournalFollower(std::string dir, bool from_start);
  std::string poll();

 private:
  std::string dir_;
  std::string pending_;  // the older segment, for the first poll() from the start
  uint64_t inode_ = 0;
  uint64_t offset_ = 0;
};

/// Where a front end's console goes while its job is kept: fds 1 and 2 into the journal.
class ConsoleJournal {
 public:
  virtual ~ConsoleJournal() = default;
  /// Error: fds 1 and 2 could not be moved (they are then unchanged, or one of them is
  /// the journal's: the caller stops).
  virtual Status start() = 0;
  /// Points fds 1 and 2 at /dev/null once everything written reached the journal; returns
  /// why the journal stopped taking output ("" it did not) and the bytes rotation dropped.
  virtual std::pair<std::string, uint64_t> finish() = 0;
};

/// --detach: fds 1 and 2 are the journal's file itself, so the console writes it as it
/// writes any file (no copy, no thread in its way: a detached job costs what an attached
/// one writing to a file costs). A thread woken by the file's changes (inotify) rotates it
/// once it holds half the bound: it renames it to console.1.log and puts a fresh
/// console.log on fds 1 and 2 at once. A write goes whole to one of the two files, and the
/// console writes whole lines, so no line is cut; the bound may be passed by what the
/// console wrote before the thread ran (a few writes). Without a bound, no thread.
class JournalRotator final : public ConsoleJournal {
 public:
  JournalRotator(std::string dir, uint64_t max_bytes);
  ~JournalRotator() override;
  JournalRotator(const JournalRotator&) = delete;
  JournalRotator& operator=(const JournalRotator&) = delete;

  Status start() override;
  std::pair<std::string, uint64_t> finish() override;

 private:
  void run();
  bool rotate();
  void trim_older(const std::string& older);

  std::string dir_;
  uint64_t max_ = 0;
  UniqueFd file_;    // console.log, also on fds 1 and 2
  UniqueFd notify_;  // inotify on console.log
  int watch_ = -1;
  UniqueFd stop_in_, stop_out_;
  std::thread thread_;
  uint64_t dropped_ = 0;
  std::string error_;
  bool started_ = false;
};

/// --nohup: moves this process's console (fds 1 and 2) into a journal through pipes. From
/// start() on, a thread drains them into `journal`; with `tee_terminal` each is a pipe of
/// its own whose bytes also go to the fd it replaced, while that takes writes (a terminal
/// that went away does not); without, both are one pipe. finish() points fds 1 and 2 at /dev/null
/// and waits for the thread, which writes what the pipes still hold (never waiting for a child that
/// kept fd 1 or 2 open).
class JournalPump final : public ConsoleJournal {
 public:
  JournalPump(Journal journal, bool tee_terminal);
  ~JournalPump() override;
  JournalPump(const JournalPump&) = delete;
  JournalPump& operator=(const JournalPump&) = delete;

  Status start() override;
  std::pair<std::string, uint64_t> finish() override;

 private:
  struct Stream {
    int in = -1;   // the pipe's read end
    int tee = -1;  // the terminal's fd (--nohup), -1: none or gone
  };
  void run();
  bool drain_once(Stream& s);
  void put(Stream& s, std::string_view data);

  Journal journal_;
  bool tee_ = false;
  std::vector<Stream> streams_;
  int stop_in_ = -1, stop_fd_ = -1;
  std::thread thread_;
  bool started_ = false;
};

}  // namespace ferry
