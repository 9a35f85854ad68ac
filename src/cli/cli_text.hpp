#pragma once
/// \file
/// Private to src/cli/: the number and path helpers the option parsers share (trim, lower
/// and split are in ferry/common/text.hpp).

#include <optional>
#include <string>
#include <string_view>

namespace ferry::cli_detail {

/// A decimal integer in [lo, hi]: optional '-' for negative bounds, digits only, nothing
/// else (no spaces, no '+', no hex). nullopt otherwise.
std::optional<long long> parse_int(std::string_view text, long long lo, long long hi);

/// A finite decimal number in [lo, hi] ("1.5", "2", ".5", "1e3"); nullopt otherwise.
std::optional<double> parse_number(std::string_view text, double lo, double hi);

/// The base name of a path: "/usr/bin/mpirun" → "mpirun".
std::string base_name(std::string_view path);

}  // namespace ferry::cli_detail
