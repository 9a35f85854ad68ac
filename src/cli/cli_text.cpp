#include "cli_text.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace ferry::cli_detail {

std::optional<long long> parse_int(std::string_view text, long long lo, long long hi) {
  if (text.empty()) return std::nullopt;
  long long v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  if (v < lo || v > hi) return std::nullopt;
  return v;
}

std::optional<double> parse_number(std::string_view text, double lo, double hi) {
  if (text.empty() || text.size() > 64) return std::nullopt;
  for (char c : text) {
    bool ok = std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'e' || c == 'E' ||
              c == '-' || c == '+';
    if (!ok) return std::nullopt;
  }
  std::string s(text);
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v) || v < lo || v > hi) return std::nullopt;
  return v;
}

std::string base_name(std::string_view path) {
  auto slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

}  // namespace ferry::cli_detail
