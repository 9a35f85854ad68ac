#pragma once
/// \file
/// How the binding part asks whether the user set a variable (OMP_NUM_THREADS,
/// CUDA_VISIBLE_DEVICES, ...): ferry defaults those only when the user did not.

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ferry/common/environ.hpp"

namespace ferry {

/// Looks a variable up in the environment the user gave the ranks (ferryd's own environment
/// plus `-x` variables): its value, or nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;

/// An EnvLookup over "K=V" entries (copied); a later entry for the same name wins.
inline EnvLookup env_lookup_from(std::vector<std::string> entries) {
  return [entries = std::move(entries)](std::string_view name) -> std::optional<std::string> {
    if (auto value = env_value(entries, name)) return std::string(*value);
    return std::nullopt;
  };
}

}  // namespace ferry
