#include "job_top.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <set>

namespace ferry {
namespace {

// Everything to the terminal goes out whole: the view's frames are small.
void put(const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::write(1, s.data() + done, s.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f s", s);
  return buf;
}

}  // namespace

TopScreen::TopScreen(asio::io_context& io, JobWatch& watch, std::function<void(bool)> hold,
                     std::string title)
    : watch_(watch),
      hold_(std::move(hold)),
      title_(std::move(title)),
      keys_(io),
      timer_(io),
      resize_(io) {}

TopScreen::~TopScreen() {
  try {
    close();
  } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor gives the terminal back or nothing
  }
}

bool TopScreen::open() {
  if (open_) return true;
  if (::isatty(0) == 0 || ::isatty(1) == 0 || ::tcgetattr(0, &saved_) != 0) return false;
  termios raw = saved_;
  raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);  // ISIG stays: Ctrl-C ends the job
  raw.c_cc[VMIN] = 1;
  raw.c_cc[VTIME] = 0;
  if (::tcsetattr(0, TCSANOW, &raw) != 0) return false;
  const int fd = ::dup(0);
  if (fd < 0) {
    ::tcsetattr(0, TCSANOW, &saved_);
    return false;
  }
  keys_.assign(fd);
  open_ = true;
  if (hold_) hold_(true);
  put("\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J");  // the alternate screen, no cursor
  resize_.add(SIGWINCH);
  wait_resize();
  read_keys();
  draw();
  redraw_later();
  return true;
}

void TopScreen::close() {
  if (!open_) return;
  open_ = false;
  timer_.cancel();
  resize_.cancel();
  std::error_code ec;
  resize_.remove(SIGWINCH, ec);
  keys_.cancel(ec);
  keys_.close(ec);
  put("\x1b[?25h\x1b[?1049l");  // the cursor and the screen as they were
  ::tcsetattr(0, TCSANOW, &saved_);
  if (hold_) hold_(false);
}

void TopScreen::read_keys() {
  keys_.async_read_some(asio::buffer(buf_), [this](std::error_code ec, size_t n) {
    if (ec || !open_) return;
    on_bytes(buf_.data(), n);
    if (open_) read_keys();
  });
}

// Keys arrive as bytes; an arrow is ESC [ A or ESC [ B (ESC O A in application mode). A lone
// ESC (a whole read of one byte) is Esc itself.
void TopScreen::on_bytes(const char* data, size_t n) {
  for (size_t i = 0; i < n && open_; ++i) {
    const char c = data[i];
    int key = static_cast<unsigned char>(c);
    if (!escape_.empty()) {
      escape_ += c;
      if (escape_.size() < 3) continue;
      key = escape_[2] == 'A' ? kUp : (escape_[2] == 'B' ? kDown : -1);
      escape_.clear();
      if (key < 0) continue;
    } else if (c == 0x1b && i + 1 < n) {
      escape_ = c;
      continue;
    }
    const TopAction a = top_key(state_, key, shown_);
    if (a == TopAction::kLeave) return close();
    if (a == TopAction::kRedraw) draw();
  }
}

void TopScreen::draw() {
  if (!open_) return;
  winsize ws{};
  int width = 80, height = 24;
  if (::ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
    width = ws.ws_col;
    height = ws.ws_row;
  }
  auto all = watch_.top_rows();
  size_t running = 0;
  std::set<std::string> hosts;
  for (const TopRow& r : all) {
    running += r.state != 'E' ? 1 : 0;
    hosts.insert(r.host);
  }
  shown_ = top_rows(state_, std::move(all));
  if (state_.selected >= shown_.size() && !shown_.empty()) state_.selected = shown_.size() - 1;
  const std::string title = "ferry top  " + std::to_string(running) + " of " +
                            std::to_string(watch_.top_rows().size()) + " ranks running on " +
                            std::to_string(hosts.size()) + " hosts  " +
                            seconds_text(watch_.elapsed()) + "  " + title_;
  std::vector<std::string> output;
  if (state_.output) output = watch_.tail().lines(state_.output_rank);
  const auto lines = top_screen(state_, shown_, title, output, width, height);
  std::string frame = "\x1b[H";
  for (size_t i = 0; i < lines.size(); ++i) {
    frame += lines[i];
    if (i + 1 < lines.size()) frame += "\r\n";
  }
  put(frame);
}

void TopScreen::redraw_later() {
  timer_.expires_after(std::chrono::seconds(1));
  timer_.async_wait([this](std::error_code ec) {
    if (ec || !open_) return;
    draw();
    redraw_later();
  });
}

void TopScreen::wait_resize() {
  resize_.async_wait([this](std::error_code ec, int) {
    if (ec || !open_) return;
    put("\x1b[2J");
    draw();
    wait_resize();
  });
}

}  // namespace ferry
