#include "toml_guard.hpp"

namespace ferry::cli_detail {
namespace {

enum class State { kCode, kComment, kBasic, kLiteral, kMultiBasic, kMultiLiteral };

bool at(std::string_view text, size_t i, std::string_view what) {
  return text.substr(i, what.size()) == what;
}

bool high(char c) { return static_cast<unsigned char>(c) >= 0x80; }

// Line and column (both from 1) of `text[index]`.
TextPosition position_of(std::string_view text, size_t index) {
  TextPosition p;
  for (size_t k = 0; k < index; ++k) {
    if (text[k] == '\n') {
      ++p.line;
      p.column = 1;
    } else {
      ++p.column;
    }
  }
  return p;
}

}  // namespace

std::optional<BadByte> non_ascii_outside_strings(std::string_view text) {
  State state = State::kCode;
  // The last character of code before this one, spaces skipped: a quote opens a string
  // only where TOML has a key or a value (as toml++ reads it), i.e. after these.
  char prev = '\n';
  auto opens_string = [&prev] {
    return prev == '\n' || prev == '=' || prev == '[' || prev == ',' || prev == '{' || prev == '.';
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    switch (state) {
      case State::kCode:
        if (high(c)) return BadByte{position_of(text, i), false};
        if (c == '#') {
          state = State::kComment;
        } else if ((c == '"' || c == '\'') && opens_string()) {
          if (at(text, i, "\"\"\""))
            state = State::kMultiBasic, i += 2;
          else if (at(text, i, "'''"))
            state = State::kMultiLiteral, i += 2;
          else
            state = c == '"' ? State::kBasic : State::kLiteral;
        } else if (c != ' ' && c != '\t' && c != '\r') {
          prev = c;
        }
        break;
      case State::kComment:
        if (c == '\n') state = State::kCode, prev = '\n';
        break;
      case State::kBasic:
        if (c == '\\')
          ++i;
        else if (c == '"')
          state = State::kCode, prev = '"';
        else if (c == '\n')
          state = State::kCode, prev = '\n';
        break;
      case State::kLiteral:
        if (c == '\'')
          state = State::kCode, prev = '\'';
        else if (c == '\n')
          state = State::kCode, prev = '\n';
        break;
      case State::kMultiBasic:
        if (c == '\\') {
          // A line-ending backslash trims the whitespace that follows, newlines included,
          // testing each character for whitespace.
          size_t j = i + 1;
          while (j < text.size() &&
                 (text[j] == ' ' || text[j] == '\t' || text[j] == '\r' || text[j] == '\n'))
            ++j;
          if (j < text.size() && high(text[j])) return BadByte{position_of(text, j), true};
          ++i;
        } else if (at(text, i, "\"\"\"")) {
          state = State::kCode;
          prev = '"';
          i += 2;
        }
        break;
      case State::kMultiLiteral:
        if (at(text, i, "'''")) {
          state = State::kCode;
          prev = '\'';
          i += 2;
        }
        break;
    }
  }
  return std::nullopt;
}

}  // namespace ferry::cli_detail
