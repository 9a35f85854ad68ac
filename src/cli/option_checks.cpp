#include "option_checks.hpp"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cli_text.hpp"

namespace ferry::cli_detail {
namespace {

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// "3600", "0.5": as short as the value allows, for the range in messages.
std::string plain(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string out_of_range(const std::string& value, const std::string& lo, const std::string& hi) {
  return value + " is out of range (" + lo + " to " + hi + ")";
}

}  // namespace

CLI::Validator whole_number(long long lo, long long hi) {
  return CLI::Validator(
      [lo, hi](std::string& value) -> std::string {
        if (!all_digits(value)) return "'" + value + "' is not a whole number";
        auto v = parse_int(value, lo, hi);
        if (!v) return out_of_range(value, std::to_string(lo), std::to_string(hi));
        value = std::to_string(*v);
        return {};
      },
      "");
}

CLI::Validator decimal_number(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& value) -> std::string {
        const size_t dot = value.find('.');
        const std::string whole = value.substr(0, dot);
        const std::string frac = dot == std::string::npos ? "" : value.substr(dot + 1);
        const bool plain_number = (all_digits(whole) || (whole.empty() && !frac.empty())) &&
                                  (frac.empty() || all_digits(frac)) && value.size() <= 64;
        if (!plain_number || value == ".") return "'" + value + "' is not a number";
        auto v = parse_number(value, lo, hi);
        if (!v) return out_of_range(value, plain(lo), plain(hi));
        return {};
      },
      "");
}

CLI::Validator not_empty() {
  return CLI::Validator(
      [](std::string& value) -> std::string { return value.empty() ? "must not be empty" : ""; },
      "");
}

}  // namespace ferry::cli_detail
