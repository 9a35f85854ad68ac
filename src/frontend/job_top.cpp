#include "job_top.hpp"

#include <unistd.h>

namespace ferry {

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
  if (terminal_.held()) return true;
  const int fd = ::dup(0);
  if (fd < 0) return false;
  if (!terminal_.take()) {
    ::close(fd);
    return false;
  }
  keys_.assign(fd);
  if (hold_) hold_(true);
  resize_.add(SIGWINCH);
  wait_resize();
  read_keys();
  draw();
  redraw_later();
  return true;
}

void TopScreen::close() {
  if (!terminal_.held()) return;
  timer_.cancel();
  resize_.cancel();
  std::error_code ec;
  resize_.remove(SIGWINCH, ec);
  keys_.cancel(ec);
  keys_.close(ec);
  terminal_.release();
  if (hold_) hold_(false);
}

void TopScreen::read_keys() {
  keys_.async_read_some(asio::buffer(buf_), [this](std::error_code ec, size_t n) {
    if (ec || !terminal_.held()) return;
    for (int key : decoder_.feed(buf_.data(), n)) {
      const TopAction a = top_key(state_, key, shown_);
      if (a == TopAction::kLeave) return close();
      if (a == TopAction::kRedraw) draw();
    }
    read_keys();
  });
}

void TopScreen::draw() {
  if (!terminal_.held()) return;
  int width = 0, height = 0;
  RawTerminal::size(width, height);
  shown_ = top_rows(state_, watch_.top_rows());
  if (state_.selected >= shown_.size() && !shown_.empty()) state_.selected = shown_.size() - 1;
  std::vector<std::string> output;
  if (state_.output) output = watch_.tail().lines(state_.output_rank);
  RawTerminal::draw(top_screen(state_, shown_, watch_.top_title(title_), output, width, height));
}

void TopScreen::redraw_later() {
  timer_.expires_after(std::chrono::seconds(1));
  timer_.async_wait([this](std::error_code ec) {
    if (ec || !terminal_.held()) return;
    draw();
    redraw_later();
  });
}

void TopScreen::wait_resize() {
  resize_.async_wait([this](std::error_code ec, int) {
    if (ec || !terminal_.held()) return;
    RawTerminal::put("\x1b[2J");
    draw();
    wait_resize();
  });
}

}  // namespace ferry
