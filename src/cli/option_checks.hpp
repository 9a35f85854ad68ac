#pragma once
/// \file
/// Private to src/cli/: the checks of option values. Only plain decimal numbers are
/// taken ("12", "1.5"): no hex, octal, exponent, sign, "nan" or "inf", and the message
/// names the value and the range as the user wrote them.

#include <CLI/CLI.hpp>

namespace ferry::cli_detail {

/// A whole decimal number in [lo, hi] (lo >= 0). The value reaches the option without
/// leading zeros, so CLI11's own conversion cannot read "010" as octal.
/// Errors: "'four' is not a whole number", "1000001 is out of range (1 to 1000000)".
CLI::Validator whole_number(long long lo, long long hi);

/// A finite decimal number in [lo, hi] (lo >= 0): digits with at most one '.'.
/// Errors: "'nan' is not a number", "5000 is out of range (0 to 3600)".
CLI::Validator decimal_number(double lo, double hi);

/// A value that must not be empty (a path, a name): "must not be empty".
CLI::Validator not_empty();

}  // namespace ferry::cli_detail
