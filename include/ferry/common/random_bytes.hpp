#pragma once
/// \file
/// Secrets: bytes from the system's random source, and their hex text.

#include <cstddef>
#include <string>
#include <string_view>

#include "ferry/common/result.hpp"

namespace ferry {

/// `n` bytes from getrandom(2); an Error when the system has no random source.
Result<std::string> random_bytes(std::size_t n);
/// Lower-case hex of `raw`, two digits per byte.
std::string hex_text(std::string_view raw);

}  // namespace ferry
