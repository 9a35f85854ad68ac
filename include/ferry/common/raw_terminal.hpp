#pragma once
/// \file
/// A full-screen view's hold on the terminal (ferryrun --top, ferry top): keys unbuffered and
/// unechoed (ISIG kept: Ctrl-C still signals), the alternate screen, no cursor; all given
/// back, as they were, by release() or the destructor.

#include <termios.h>

#include <string>
#include <vector>

namespace ferry {

class RawTerminal {
 public:
  RawTerminal() = default;
  ~RawTerminal() { release(); }
  RawTerminal(const RawTerminal&) = delete;
  RawTerminal& operator=(const RawTerminal&) = delete;

  /// Takes stdin and stdout; false (nothing changed) when either is no terminal.
  bool take();
  /// Gives them back; idempotent.
  void release() noexcept;
  bool held() const { return held_; }
  /// The terminal's size (80x24 when it cannot be read).
  static void size(int& width, int& height);
  /// Draws `lines` from the top left, each already exactly as wide as the terminal.
  static void draw(const std::vector<std::string>& lines);
  /// Writes `text` to stdout whole.
  static void put(const std::string& text);

 private:
  termios saved_{};
  bool held_ = false;
};

}  // namespace ferry
