#pragma once
/// \file
/// Small text helpers every part shares: the parsers of user input (-H, hostfiles, job files,
/// ssh and binding options) and the readers of kernel files. ASCII only and locale-free, so
/// what parses never depends on the user's LC_CTYPE. Prefixes and suffixes: C++20's
/// std::string_view::starts_with / ends_with.

#include <string>
#include <string_view>
#include <vector>

#include "ferry/common/result.hpp"

namespace ferry {

/// True for ASCII space, tab, LF, VT, FF and CR (`isspace` in the "C" locale).
constexpr bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/// `text` without leading and trailing whitespace (is_space): a view into `text`, so keep
/// what it views alive (copy it into a std::string to keep the result).
std::string_view trim(std::string_view text);

/// `text` with A-Z lowered; every other byte (UTF-8 included) unchanged.
std::string lower(std::string_view text);

/// `text` cut at each `sep`, empty pieces kept: "a,,b" → {"a", "", "b"}, "" → {""}.
std::vector<std::string> split(std::string_view text, char sep);

/// Numbers as sorted ranges: {8, 0, 1, 2, 3, 10, 11} -> "0-3,8,10-11" (rank sets in messages).
std::string number_ranges(std::vector<int> numbers);

/// `text` cut into words as a shell does for plain words and '...' / "..." quoting (no
/// escapes, no expansion): `-p 2222 -o "User=a b"` → {"-p", "2222", "-o", "User=a b"}. An
/// unbalanced quote is an error quoting `text`.
Result<std::vector<std::string>> shell_words(std::string_view text);

}  // namespace ferry
