#include "ferry_top.hpp"

#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>

#include "ferry/common/raw_terminal.hpp"
#include "ferry/monitor/top_view.hpp"
#include "ferry/monitor/view_board.hpp"
#include "ferry/session/control_socket.hpp"

namespace ferry {
namespace {

std::atomic<bool> g_left{false};
void on_leave_signal(int /*signo*/) { g_left = true; }

struct Viewer {
  std::string dir, id;
  TopState state;
  TopSnapshot snapshot;
  std::vector<TopRow> shown;
  std::vector<std::string> lines;
  TopEnd ended;  // why the view ended; why "" still on

  // Asks the front end; false once it cannot be asked.
  bool refresh() {
    auto rows = control_request(dir, "top");
    if (!rows) {
      ended = {"job " + id + ": its front end is gone (the job ended; 'ferry wait " + id +
                   "' gives its status)",
               true};
      return false;
    }
    if (*rows == "no view") {
      ended.why = "job " + id + " was started by a ferryrun without the live view";
      return false;
    }
    if (*rows != "no rows yet") parse_top_rows_json(*rows, snapshot);
    if (state.output) {
      auto answer = control_request(dir, "top lines " + std::to_string(state.output_rank));
      if (answer) parse_lines_json(*answer, lines);
    }
    return true;
  }

  void draw() {
    int width = 0, height = 0;
    RawTerminal::size(width, height);
    shown = top_rows(state, snapshot.rows);
    if (state.selected >= shown.size() && !shown.empty()) state.selected = shown.size() - 1;
    // The job's id first: the command at the end of the front end's title may be cut.
    constexpr std::string_view kHead = "ferry top  ";
    std::string title = snapshot.title.empty() ? "waiting for its first samples" : snapshot.title;
    if (title.starts_with(kHead)) title.erase(0, kHead.size());
    title = std::string(kHead) + "job " + id + "  " + title;
    RawTerminal::draw(top_screen(state, shown, title, lines, width, height));
  }
};

}  // namespace

TopEnd run_ferry_top(const std::string& dir, const std::string& id) {
  RawTerminal terminal;
  if (!terminal.take()) return {"ferry top needs a terminal: stdin and stdout must be one"};
  struct sigaction sa {};
  sa.sa_handler = on_leave_signal;
  for (int s : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(s, &sa, nullptr);
  Viewer v{dir, id, {}, {}, {}, {}, {}};
  KeyDecoder decoder;
  using Clock = std::chrono::steady_clock;
  auto next = Clock::now();
  while (!g_left) {
    if (Clock::now() >= next) {
      if (!v.refresh()) break;
      v.draw();
      next = Clock::now() + std::chrono::seconds(1);
    }
    pollfd p{0, POLLIN, 0};
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now());
    if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(wait.count(), 0))) <= 0) continue;
    char buf[64];
    const ssize_t n = ::read(0, buf, sizeof buf);
    if (n <= 0) break;
    bool leave = false;
    for (int key : decoder.feed(buf, static_cast<size_t>(n))) {
      const bool was_output = v.state.output;
      const TopAction a = top_key(v.state, key, v.shown);
      leave = leave || a == TopAction::kLeave;
      if (v.state.output && !was_output) v.lines.clear();
      if (v.state.output != was_output) next = Clock::now();  // ask for its lines now
    }
    if (leave) break;
    v.draw();
  }
  terminal.release();
  return v.ended;
}

}  // namespace ferry
