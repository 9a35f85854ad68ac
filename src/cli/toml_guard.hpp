#pragma once
/// \file
/// Private to src/cli/: a lexical check run before toml++ sees a job file. toml++ 3.3 (the
/// Debian package) reaches __builtin_unreachable in its Unicode whitespace tables for many
/// non-ASCII code points where it tests for whitespace: outside strings, and after the
/// line-ending backslash of a multi-line basic string (upstream marzer/tomlplusplus#190,
/// #295; found here by tests/fuzz/fuzz_job_file). TOML allows non-ASCII only inside strings
/// and comments, so such input is refused here with a clear message instead. (toml++'s
/// look-ahead after an invalid value can still reach the tables; that input is invalid
/// either way.)

#include <optional>
#include <string_view>

namespace ferry::cli_detail {

/// Where a text position is, 1-based.
struct TextPosition {
  int line = 1;
  int column = 1;
};

/// A byte toml++ 3.3 cannot be trusted with.
struct BadByte {
  TextPosition where;
  bool after_backslash = false;  ///< after a line-ending backslash, inside a string
};

/// The first byte >= 0x80 that is neither inside a TOML string ("...", '...', """...""",
/// '''...''') nor a comment, or that follows the line-ending backslash of a multi-line
/// basic string; nullopt when there is none. A quote opens a string only where a key or a
/// value can start (after a newline, '=', '[', ',', '{' or '.', spaces skipped).
std::optional<BadByte> non_ascii_outside_strings(std::string_view text);

}  // namespace ferry::cli_detail
