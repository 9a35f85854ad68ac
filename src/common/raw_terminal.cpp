#include "ferry/common/raw_terminal.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

namespace ferry {

bool RawTerminal::take() {
  if (held_) return true;
  if (::isatty(0) == 0 || ::isatty(1) == 0 || ::tcgetattr(0, &saved_) != 0) return false;
  termios raw = saved_;
  raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);  // ISIG stays: Ctrl-C still signals
  raw.c_cc[VMIN] = 1;
  raw.c_cc[VTIME] = 0;
  if (::tcsetattr(0, TCSANOW, &raw) != 0) return false;
  held_ = true;
  put("\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J");  // the alternate screen, no cursor
  return true;
}

void RawTerminal::release() noexcept {
  if (!held_) return;
  held_ = false;
  put("\x1b[?25h\x1b[?1049l");  // the cursor and the screen as they were
  ::tcsetattr(0, TCSANOW, &saved_);
}

void RawTerminal::size(int& width, int& height) {
  winsize ws{};
  width = 80;
  height = 24;
  if (::ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
    width = ws.ws_col;
    height = ws.ws_row;
  }
}

void RawTerminal::draw(const std::vector<std::string>& lines) {
  std::string frame = "\x1b[H";
  for (size_t i = 0; i < lines.size(); ++i) {
    frame += lines[i];
    if (i + 1 < lines.size()) frame += "\r\n";
  }
  put(frame);
}

void RawTerminal::put(const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(1, text.data() + done, text.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

}  // namespace ferry
