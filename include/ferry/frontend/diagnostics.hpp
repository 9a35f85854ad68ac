#pragma once
/// \file
/// The one place ferryrun's own messages go: whole lines on stderr, after the rank output
/// buffered so far, so a report never lands in the middle of a rank's line.

#include <functional>
#include <string>
#include <utility>

#include "ferry/output/sink.hpp"

namespace ferry {

/// Writes ferryrun's messages as whole lines, each starting with the name the user called
/// ferry by ("mpirun: ..."), so scripts and people see the tool they ran.
class Diagnostics {
 public:
  /// `out` is flushed before each message; `fd` receives the lines (stderr); `program`
  /// starts each line (see program_name in personality.hpp).
  Diagnostics(OutputSink* out, int fd, bool verbose, std::string program = "ferryrun")
      : out_(out), fd_(fd), verbose_(verbose), program_(std::move(program)) {}
  /// "<program>: <msg>".
  void error(const std::string& msg) { raw(program_ + ": " + msg + "\n"); }
  /// "<program>: warning: <msg>".
  void warn(const std::string& msg) { raw(program_ + ": warning: " + msg + "\n"); }
  /// Only with --verbose: "<program>: <msg>".
  void verbose(const std::string& msg) {
    if (verbose_) raw(program_ + ": " + msg + "\n");
  }
  /// The name lines start with, for multi-line blocks written with raw().
  const std::string& program() const { return program_; }
  bool is_verbose() const { return verbose_; }
  /// Writes text as is (a multi-line block).
  void raw(const std::string& text);
  /// Sends whole messages through `writer` instead of the fd (the console's print_line,
  /// which waits behind a rank's unfinished long line instead of tearing it).
  void set_writer(std::function<void(const std::string&)> writer) { writer_ = std::move(writer); }

  /// Allows a one-line progress display on the fd (a terminal, without --verbose): while
  /// hosts connect, progress() redraws one line in place ("\r...\x1b[K").
  void enable_progress() { progress_allowed_ = true; }
  /// Redraws the progress line with `text` (no newline). Once any message was printed while a
  /// progress line was up, the display stops for good: a message queued behind the console
  /// must never be drawn over.
  void progress(const std::string& text);
  /// Erases the progress line, if one is up.
  void end_progress();

 private:
  void write_fd(const std::string& bytes);

  std::function<void(const std::string&)> writer_;
  bool progress_allowed_ = false;
  bool progress_up_ = false;
  OutputSink* out_;
  int fd_;
  bool verbose_;
  std::string program_;
};

}  // namespace ferry
