#pragma once
// Private to src/frontend/: `ferryrun --top` on this terminal. The screen's text and keys are
// monitor/top_view.hpp's, the terminal's raw mode common/raw_terminal.hpp's; here are the
// loop's sides: keys read from stdin, a redraw each second and on a resize, and the console
// held while the view is up. Leaving the view (q, or the job's end) gives the terminal back
// as it was and prints what the console held; the job goes on.

#include <array>
#include <asio.hpp>
#include <functional>
#include <string>
#include <vector>

#include "ferry/common/raw_terminal.hpp"
#include "ferry/monitor/top_view.hpp"
#include "ferry/monitor/view_board.hpp"
#include "job_watch.hpp"

namespace ferry {

class TopScreen {
 public:
  /// `hold(true)` keeps the console's lines, `hold(false)` prints them; `title` opens the
  /// first line (the command).
  TopScreen(asio::io_context& io, JobWatch& watch, std::function<void(bool)> hold,
            std::string title);
  ~TopScreen();
  TopScreen(const TopScreen&) = delete;
  TopScreen& operator=(const TopScreen&) = delete;

  /// Takes the terminal; false (and nothing changed) when stdin or stdout is no terminal.
  bool open();
  /// Gives the terminal back and prints what the console held; idempotent.
  void close();
  bool is_open() const { return terminal_.held(); }

 private:
  void read_keys();
  void draw();
  void redraw_later();
  void wait_resize();

  JobWatch& watch_;
  std::function<void(bool)> hold_;
  std::string title_;
  asio::posix::stream_descriptor keys_;
  asio::steady_timer timer_;
  asio::signal_set resize_;
  std::array<char, 64> buf_{};
  KeyDecoder decoder_;
  RawTerminal terminal_;
  TopState state_;
  std::vector<TopRow> shown_;
};

}  // namespace ferry
