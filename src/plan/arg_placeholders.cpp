#include "ferry/plan/arg_placeholders.hpp"

#include <array>
#include <string_view>

namespace ferry {
namespace {

constexpr std::array<std::string_view, 6> kNames = {"rank",       "local_rank",  "node_rank",
                                                    "world_size", "master_addr", "master_port"};

std::string value_of(std::string_view name, const PlaceholderValues& v) {
  if (name == "rank") return std::to_string(v.rank);
  if (name == "local_rank") return std::to_string(v.local_rank);
  if (name == "node_rank") return std::to_string(v.node_rank);
  if (name == "world_size") return std::to_string(v.world_size);
  if (name == "master_addr") return v.master_addr;
  return v.master_port;
}

bool known(std::string_view name) {
  for (auto n : kNames)
    if (n == name) return true;
  return false;
}

// Walks `arg`: literal text to `text`, each placeholder's name to `name`; false at a bad one
// (`bad` says which).
template <typename Text, typename Name>
bool walk(const std::string& arg, Text text, Name name, std::string& bad) {
  for (size_t i = 0; i < arg.size();) {
    const char c = arg[i];
    if ((c == '{' || c == '}') && i + 1 < arg.size() && arg[i + 1] == c) {
      text(std::string_view(&arg[i], 1));
      i += 2;
    } else if (c == '{') {
      const size_t close = arg.find('}', i);
      if (close == std::string::npos) {
        bad = "a '{' without its '}'";
        return false;
      }
      const std::string_view n(&arg[i + 1], close - i - 1);
      if (!known(n)) {
        bad = "unknown placeholder {" + std::string(n) + "}";
        return false;
      }
      name(n);
      i = close + 1;
    } else {
      text(std::string_view(&arg[i], 1));
      ++i;
    }
  }
  return true;
}

}  // namespace

Status check_placeholders(const std::vector<std::string>& args) {
  for (const auto& arg : args) {
    std::string bad;
    if (!walk(
            arg, [](std::string_view) {}, [](std::string_view) {}, bad)) {
      std::string list;
      for (auto n : kNames) list += (list.empty() ? "{" : ", {") + std::string(n) + "}";
      return make_error("--expand-args: " + bad + " in '" + arg + "' (known: " + list +
                        "; {{ and }} for literal braces)");
    }
  }
  return {};
}

std::string expand_placeholders(const std::string& arg, const PlaceholderValues& v) {
  std::string out;
  std::string bad;
  if (!walk(
          arg, [&](std::string_view t) { out.append(t); },
          [&](std::string_view n) { out += value_of(n, v); }, bad))
    return arg;
  return out;
}

}  // namespace ferry
