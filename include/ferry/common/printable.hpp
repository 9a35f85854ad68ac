#pragma once
/// \file
/// User input echoed in a message, made safe to print.

#include <cstddef>
#include <string>
#include <string_view>

namespace ferry {

/// `text` as it may appear in a one-line message: every byte outside printable ASCII
/// (controls, DEL, bytes of 0x80 and up) as `\xNN`; past `max_bytes` of input the rest is
/// left out and "... (N bytes)" says how long it was. Printable text is kept as it is (a
/// backslash too), so a message made of escaped parts can be escaped again unchanged.
std::string printable(std::string_view text, std::size_t max_bytes = 200);

}  // namespace ferry
