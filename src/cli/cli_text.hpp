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
/// "256M", "1G", "65536", "64K" (K, M, G: powers of 1024): bytes. nullopt for anything else.
std::optional<uint64_t> parse_size(const std::string& text);

/// A finite decimal number in [lo, hi] ("1.5", "2", ".5", "1e3"); nullopt otherwise.
std::optional<double> parse_number(std::string_view text, double lo, double hi);

/// The base name of a path: "/usr/bin/mpirun" → "mpirun".
std::string base_name(std::string_view path);

/// What --help shows for an option's value: the word for what it is ("--wdir DIR", "-np N",
/// "--mca NAME VALUE"), looked up by the option's first long name (`name`, without dashes;
/// its short one when it has none). An option with a list of choices shows the list
/// ("{auto,ssh,...}" from CLI11's type name "TEXT:{auto,ssh,...}"); one not listed, the
/// validator's word or a word for its type (INT: N) instead of CLI11's TEXT.
std::string value_placeholder(std::string_view name, std::string_view type_name);

}  // namespace ferry::cli_detail
