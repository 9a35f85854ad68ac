#pragma once
/// \file
/// The one place ferryrun's own messages go: whole lines on stderr, after the rank output
/// buffered so far, so a report never lands in the middle of a rank's line.

#include <functional>
#include <string>

#include "ferry/output/sink.hpp"

namespace ferry {

/// Writes ferryrun's messages as whole lines.
class Diagnostics {
 public:
  /// `out` is flushed before each message; `fd` receives the lines (stderr).
  Diagnostics(OutputSink* out, int fd, bool verbose) : out_(out), fd_(fd), verbose_(verbose) {}
  /// "ferryrun: <msg>".
  void error(const std::string& msg) { raw("ferryrun: " + msg + "\n"); }
  /// "ferryrun: warning: <msg>".
  void warn(const std::string& msg) { raw("ferryrun: warning: " + msg + "\n"); }
  /// Only with --verbose: "ferryrun: <msg>".
  void verbose(const std::string& msg) {
    if (verbose_) raw("ferryrun: " + msg + "\n");
  }
  bool is_verbose() const { return verbose_; }
  /// Writes text as is (a multi-line block).
  void raw(const std::string& text);
  /// Sends whole messages through `writer` instead of the fd (the console's print_line,
  /// which waits behind a rank's unfinished long line instead of tearing it).
  void set_writer(std::function<void(const std::string&)> writer) { writer_ = std::move(writer); }

 private:
  std::function<void(const std::string&)> writer_;
  OutputSink* out_;
  int fd_;
  bool verbose_;
};

}  // namespace ferry
