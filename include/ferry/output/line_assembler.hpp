#pragma once
/// \file
/// Splits one byte stream (one rank's stdout or stderr) into whole lines, holding the
/// unfinished last line between chunks, up to a cap.

#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

namespace ferry {

/// How many bytes of an unfinished line are held before the line is offered for
/// pass-through (see LineAssembler::feed).
inline constexpr std::size_t kDefaultLineCap = std::size_t{64} * 1024;

/// Splits one byte stream into whole lines. Only '\n' ends a line ('\r' is ordinary data).
///
/// The unfinished last line is held between chunks. When it would grow past `cap`, the
/// assembler offers it to the handler: a handler that takes it gets the rest of that line
/// through `more` as it arrives ("mid-line"), so memory stays bounded; a handler that
/// refuses leaves it held, and the held line then grows past the cap until the handler
/// takes it (take_held) or the line ends — bounding that is the handler's job.
///
/// `feed` and `finish` call a handler inline (a template, no virtual dispatch). Handler:
///   void lines(std::string_view held, std::string_view body);
///     One or more complete lines, `held` + `body`. `body` is non-empty and ends in '\n';
///     `held` (may be empty) is the start of the first line and holds no '\n'.
///   bool overflow(std::string_view held, std::string_view tail);
///     The unfinished line `held` + `tail` (no '\n') passed the cap. Return true to take it
///     (the assembler drops it and goes mid-line), false to leave it held (tail is added).
///   void more(std::string_view bytes, bool line_ended);
///     Bytes continuing a taken line. When `line_ended`, `bytes` ends in '\n' and the
///     assembler is no longer mid-line.
///   void end_unterminated(std::string_view held, bool mid_line);
///     From finish(): the stream ended inside a line. `mid_line`: the handler had taken
///     the line (held is empty); otherwise `held` is the whole unfinished line.
/// Views passed to the handler are valid only during the call.
class LineAssembler {
 public:
  /// `cap`: the most bytes of an unfinished line held before it is offered (>= 1).
  explicit LineAssembler(std::size_t cap = kDefaultLineCap);

  /// Consumes the next chunk of the stream (any size, any bytes, NULs included).
  template <typename Handler>
  void feed(std::string_view bytes, Handler& handler);

  /// The stream ended: reports an unfinished line, if any, and resets to a fresh state.
  template <typename Handler>
  void finish(Handler& handler);

  /// Takes the held unfinished line now, as if `overflow` had returned true: the assembler
  /// goes mid-line and reports the rest of the line through `more`.
  std::string take_held();

  /// Drops the first `n` bytes of the held unfinished line (states a '\r' went back over).
  void drop_held_front(std::size_t n) { held_.erase(0, n); }

  /// Ends a taken line early (the handler broke it): the next bytes start a new line.
  void break_line() { mid_line_ = false; }

  /// True while the handler owns the current line (took it and its '\n' has not come).
  bool mid_line() const { return mid_line_; }
  /// Bytes of the unfinished line currently held.
  std::size_t held_size() const { return held_.size(); }
  /// The unfinished line currently held (no '\n').
  std::string_view held() const { return held_; }
  /// The cap given at construction.
  std::size_t cap() const { return cap_; }

 private:
  // Drops the held bytes; gives memory back when a refused line made the buffer large.
  void clear_held();

  std::size_t cap_;
  std::string held_;
  bool mid_line_ = false;
};

template <typename Handler>
void LineAssembler::feed(std::string_view bytes, Handler& handler) {
  const char* p = bytes.data();
  const char* const end = p + bytes.size();
  if (p == end) return;
  if (mid_line_) {
    const auto* nl = static_cast<const char*>(std::memchr(p, '\n', end - p));
    if (nl == nullptr) {
      handler.more(std::string_view(p, end - p), false);
      return;
    }
    mid_line_ = false;
    handler.more(std::string_view(p, nl + 1 - p), true);
    p = nl + 1;
    if (p == end) return;
  }
  // Text chunks nearly always end at or near a '\n', so searching backwards is cheap; the
  // lines in between are scanned once, by whoever formats them.
  const auto* last = static_cast<const char*>(memrchr(p, '\n', end - p));
  if (last != nullptr) {
    handler.lines(held_, std::string_view(p, last + 1 - p));
    clear_held();
    p = last + 1;
    if (p == end) return;
  }
  const std::string_view tail(p, end - p);
  // Past the cap the handler may take the line; a line it refuses stays held.
  if (held_.size() + tail.size() > cap_ && handler.overflow(held_, tail)) {
    clear_held();
    mid_line_ = true;
  } else {
    held_.append(tail);
  }
}

template <typename Handler>
void LineAssembler::finish(Handler& handler) {
  if (mid_line_) {
    mid_line_ = false;
    handler.end_unterminated(std::string_view(), true);
  } else if (!held_.empty()) {
    handler.end_unterminated(held_, false);
  }
  clear_held();
}

}  // namespace ferry
