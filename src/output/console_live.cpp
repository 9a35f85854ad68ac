// ConsoleOutput's progress bars and prompts: unfinished lines that are shown before their
// '\n' (see "Progress bars and prompts" in console_output.hpp). Untagged and unstamped, where
// the console gets the rank's bytes exactly, a line with a '\r' is not cut down: it takes
// its fd at once and its bytes pass as they come.
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "console_parts.hpp"
#include "ferry/output/console_output.hpp"

namespace ferry {
namespace {

using Clock = std::chrono::steady_clock;

// Moves the cursor to the start of the line and erases it.
constexpr std::string_view kErase = "\r\x1b[K";

// The last '\r' of `v` that has a byte after it, or nullptr.
const char* last_return(std::string_view v) {
  if (v.size() < 2) return nullptr;
  return static_cast<const char*>(memrchr(v.data(), '\r', v.size() - 1));
}

// `v` cut to at most `n` bytes, not inside a UTF-8 character.
std::string_view cut(std::string_view v, std::size_t n) {
  if (v.size() <= n) return v;
  while (n > 0 && (static_cast<unsigned char>(v[n]) & 0xC0) == 0x80) --n;
  return v.substr(0, n);
}

}  // namespace

void ConsoleOutput::set_steady_clock(std::function<Clock::time_point()> clock) {
  steady_ = std::move(clock);
}

Clock::time_point ConsoleOutput::now() const { return steady_ ? steady_() : Clock::now(); }

// After a write left an unfinished line: drops the bar states a '\r' went back over, and
// watches the line (bar or prompt). `fed`: the bytes written, the end of which the held
// line's new bytes are.
void ConsoleOutput::watch_partial(StreamState& s, std::size_t fed) {
  LineAssembler& a = s.assembler;
  const std::string_view held = a.held();
  // Only the new bytes (and the one before them: a '\r' that waited for its next byte).
  const std::size_t from = held.size() > fed + 1 ? held.size() - fed - 1 : 0;
  const char* r = last_return(held.substr(from));
  // Untagged and unstamped, the console gets the rank's bytes exactly: a bar is not cut
  // down but passed through as it comes, holding its fd as a prompt does.
  if (s.tag.empty() && !options_.timestamps && (r != nullptr || held.back() == '\r')) {
    if (s.dest->holder == nullptr) return take_prompt(s);
  } else if (r != nullptr || held.back() == '\r') {
    // "50%\r" (the return written after the state, not before it) makes a bar too.
    if (r != nullptr) a.drop_held_front(static_cast<std::size_t>(r + 1 - held.data()));
    s.bar = true;
    Destination& d = *s.dest;
    if (d.live) {
      if (d.bar == nullptr || d.bar->rank > s.rank) d.bar = &s;
      if (d.bar == &s) d.dirty = live_due_ = true;
    }
  }
  s.fed = now();
  if (!s.watched) {
    s.watched = true;
    partials_.push_back(&s);
  }
  // A bar is drawn from flush() (which arms the timer when it must wait); a prompt waits.
  if (!s.bar) arm_timer(s.fed + prompt_delay(s));
}

// Counts a write's bytes into the stream's windows of one second, for prompt_delay().
void ConsoleOutput::count_bytes(StreamState& s, std::size_t n) {
  const Clock::time_point t = now();
  if (t - s.window_start >= std::chrono::seconds(1)) {
    s.last_window_bytes = t - s.window_start < std::chrono::seconds(2) ? s.window_bytes : 0;
    s.window_start = t;
    s.window_bytes = 0;
  }
  s.window_bytes += n;
}

// How long the stream's unfinished line waits before it is shown as a prompt: longer when
// it came amid heavy output (in the second of its last bytes or the one before) or waited
// while ferryrun stopped reading, where the rest of a line is more likely on its way than
// a question waiting for an answer. A prompt taken wrongly would hold the fd until the
// rest came, the other ranks' lines queued behind it.
std::chrono::milliseconds ConsoleOutput::prompt_delay(const StreamState& s) const {
  const bool heavy = std::max(s.window_bytes, s.last_window_bytes) >= options_.streaming_bytes;
  return heavy || s.fed == resumed_ ? options_.streaming_prompt_delay : options_.prompt_delay;
}

// The bar's line ended (or its stream): its final state is printed as a line.
void ConsoleOutput::end_bar(StreamState& s) {
  s.bar = false;
  Destination& d = *s.dest;
  if (d.bar != &s) return;
  unshow(d);
  d.bar = nullptr;
  pick_live(d);
}

// The lowest rank with a bar on `d` is drawn next.
void ConsoleOutput::pick_live(Destination& d) {
  for (StreamState* p : partials_)
    if (p->bar && p->dest == &d && (d.bar == nullptr || p->rank < d.bar->rank)) d.bar = p;
  if (d.bar != nullptr) d.dirty = live_due_ = true;
}

// Something else is written to `d`: the bar's line is erased first.
void ConsoleOutput::erase_bar(Destination& d) {
  d.out.append(kErase);
  d.shown = false;
  d.dirty = live_due_ = true;
}

// A member beside the other steps of the bar, though it needs nothing else of this object.
// NOLINTNEXTLINE(readability-convert-member-functions-to-static)
void ConsoleOutput::draw(Destination& d, Clock::time_point now) {
  StreamState& s = *d.bar;
  std::string_view state = s.assembler.held();
  while (!state.empty() && (state.back() == '\r' || state.back() == '\n')) state.remove_suffix(1);
  const std::size_t room = d.width > s.tag.size() + 1 ? d.width - s.tag.size() - 1 : 0;
  d.out.append(d.shown ? kErase : std::string_view("\r"));
  d.out.append(s.tag);
  d.out.append(cut(state, room));
  d.shown = true;
  d.dirty = false;
  d.drawn = now;
}

// Draws the bars that changed and whose interval passed; the others wait for the timer.
void ConsoleOutput::draw_due() {
  const Clock::time_point t = now();
  live_due_ = false;
  for (Destination* d : {out_.get(), err_.get()}) {
    if (d == nullptr || !d->dirty || d->bar == nullptr || d->holder != nullptr) continue;
    if (d->drawn + options_.bar_interval > t) {
      live_due_ = true;
      arm_timer(d->drawn + options_.bar_interval);
      continue;
    }
    draw(*d, t);
  }
}

// A prompt sat long enough: it takes its fd (as an over-cap line) and goes out now.
void ConsoleOutput::take_prompt(StreamState& s) {
  Destination& d = *s.dest;
  if (fold_) fold_out(true);
  unshow(d);
  const std::string held = s.assembler.take_held();
  d.holder = &s;
  d.out.append(stamp_);
  d.out.append(s.tag);
  d.out.append(held);
}

Clock::time_point ConsoleOutput::tick() {
  const Clock::time_point t = now();
  Clock::time_point next = Clock::time_point::max();
  std::erase_if(partials_, [&](StreamState* s) {
    LineAssembler& a = s->assembler;
    if (a.held_size() == 0 || a.mid_line()) {
      s->watched = false;
      return true;
    }
    if (s->bar) return false;
    const Clock::time_point due = s->fed + prompt_delay(*s);
    if (due > t) {
      next = std::min(next, due);
      return false;
    }
    // Shown once the holder's line ends. Nor while the flow handler stopped the reading: the
    // line's rest may be held back by ferry itself, not by the rank (caught_up() restarts
    // the wait). Taken as a prompt, it would hold the fd, and the other ranks' lines, read
    // again once the console caught up, would queue behind it, past what the flow counts.
    if (behind_ || s->dest->holder != nullptr) {
      next = std::min(next, t + prompt_delay(*s));
      return false;
    }
    take_prompt(*s);
    s->watched = false;
    return true;
  });
  if (fold_) next = std::min(next, fold_out(false));
  flush();
  for (Destination* d : {out_.get(), err_.get()})
    if (d != nullptr && d->bar != nullptr && d->dirty)
      next = std::min(next, std::max(t, d->drawn + options_.bar_interval));
  return next;
}

void ConsoleOutput::arm_timer(Clock::time_point at) {
  if (!timer_ || at >= timer_at_) return;
  timer_at_ = at;
  timer_->expires_at(at);
  timer_->async_wait([this](const std::error_code& ec) {
    if (ec) return;
    timer_at_ = Clock::time_point::max();
    const Clock::time_point next = tick();
    if (next != Clock::time_point::max()) arm_timer(next);
  });
}

// Whether `fd` is a terminal, and its width.
bool console_terminal(int fd, std::size_t& width) {
  if (::isatty(fd) == 0) return false;
  struct winsize ws {};
  if (::ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) width = ws.ws_col;
  return true;
}

}  // namespace ferry
