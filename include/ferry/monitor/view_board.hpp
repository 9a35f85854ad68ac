#pragma once
/// \file
/// The live view of a detached job, for `ferry top ID`: the job's front end publishes its
/// rows once a second (and the recent lines of the one rank a viewer asked for), the job's
/// control socket hands them out on its own thread. One mutex; every value is a JSON line.

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "ferry/monitor/top_view.hpp"

namespace ferry {

class ViewBoard {
 public:
  /// The front end (its loop): the rows now, and the wanted rank's lines (or none).
  void publish(std::string rows_json, std::string lines_json);
  /// The control socket's thread: the latest rows ("" before the first).
  std::string rows();
  /// The control socket's thread: `rank`'s lines as last published, and from now on the
  /// front end publishes that rank's ("[]" until it did).
  std::string lines(int rank);
  /// The rank whose lines are wanted; -1 none.
  int wanted() const;
  /// Whether a viewer asked for the rows in the last few seconds (else nothing need be
  /// published).
  bool watched() const;

 private:
  mutable std::mutex mutex_;
  std::string rows_, lines_ = "[]";
  int wanted_ = -1, lines_rank_ = -1;
  std::chrono::steady_clock::time_point asked_{};
};

/// The rows as one JSON line, with the view's title; and back (an Error for a line that is
/// not such JSON).
std::string top_rows_json(const std::vector<TopRow>& rows, const std::string& title);
struct TopSnapshot {
  std::string title;
  std::vector<TopRow> rows;
};
bool parse_top_rows_json(const std::string& json, TopSnapshot& out);
std::string lines_json(const std::vector<std::string>& lines);
bool parse_lines_json(const std::string& json, std::vector<std::string>& out);

/// Keys as a terminal in raw mode sends them: plain bytes, and the arrows (ESC [ A, ESC [ B,
/// or ESC O A/B) as kUp and kDown; a lone ESC at the end of a read is Esc.
class KeyDecoder {
 public:
  std::vector<int> feed(const char* data, size_t n);

 private:
  std::string escape_;
};

}  // namespace ferry
