// mpirun's --bind-to / --map-by / --rank-by words, as Open MPI 4 spells them.

#include "ferry/cli/binding_flags.hpp"

#include <algorithm>

#include "cli_text.hpp"
#include "ferry/common/text.hpp"

namespace ferry {
namespace {

using cli_detail::parse_int;

std::string quoted(const std::string& s) { return "'" + s + "'"; }

// Open MPI joins modifiers with ':' and also accepts ',' between them ("PE=2,SPAN").
std::vector<std::string> modifiers_of(const std::vector<std::string>& parts, size_t first) {
  std::vector<std::string> out;
  for (size_t i = first; i < parts.size(); ++i)
    for (auto& m : split(parts[i], ',')) out.push_back(m);
  return out;
}

}  // namespace

Status apply_bind_to(const std::string& text, BindingOptions& binding) {
  auto parts = split(text, ':');
  std::string unit = lower(parts[0]);
  if (unit == "none")
    binding.bind_to = BindTo::kNone;
  else if (unit == "core")
    binding.bind_to = BindTo::kCore;
  else if (unit == "hwthread")
    binding.bind_to = BindTo::kHwthread;
  else if (unit == "socket" || unit == "package" || unit == "l3cache")
    binding.bind_to = BindTo::kSocket;
  else if (unit == "numa")
    binding.bind_to = BindTo::kNuma;
  else
    return make_error("unknown unit " + quoted(parts[0]) + " in " + quoted(text) +
                      " (expected none, core, hwthread, socket or numa)");
  for (const auto& m : modifiers_of(parts, 1)) {
    std::string l = lower(m);
    if (!l.empty() &&
        std::all_of(l.begin(), l.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      // MPICH hydra's count: `-bind-to core:2` binds each rank to 2 cores (as PE=2).
      auto n = parse_int(l, 1, 1'000'000);
      if (!n) return make_error("bad count " + quoted(m) + " in " + quoted(text));
      if (binding.bind_to == BindTo::kCore)
        binding.pe = static_cast<int>(*n);
      else if (*n != 1)
        return make_error(quoted(text) + ": only core takes a count (core:N, N cores per rank)");
      continue;
    }
    if (l != "overload-allowed" && l != "if-supported")
      return make_error("unknown modifier " + quoted(m) + " in " + quoted(text) +
                        " (expected overload-allowed, if-supported, or a count: core:N)");
  }
  return {};
}

Status apply_map_by(const std::string& text, JobOptions& job) {
  auto parts = split(text, ':');
  std::string what = lower(parts[0]);
  PlacementPolicy& policy = job.placement;
  BindingOptions& binding = job.binding;
  size_t first_modifier = 1;
  policy.mapping = HostMapping::kBySlot;
  policy.per_host = 0;
  binding.pe = 0;
  if (what == "slot") {
    binding.map_by = MapBy::kSlot;
  } else if (what == "node") {
    policy.mapping = HostMapping::kByNode;
    binding.map_by = MapBy::kNode;
  } else if (what == "core" || what == "hwthread") {
    binding.map_by = MapBy::kSlot;
    if (binding.bind_to == BindTo::kDefault)
      binding.bind_to = what == "core" ? BindTo::kCore : BindTo::kHwthread;
  } else if (what == "numa") {
    binding.map_by = MapBy::kNuma;
  } else if (what == "socket" || what == "package") {
    binding.map_by = MapBy::kSocket;
  } else if (what == "ppr") {
    if (parts.size() < 3) return make_error(quoted(text) + " is incomplete (expected ppr:N:node)");
    auto n = parse_int(parts[1], 1, 1'000'000);
    if (!n)
      return make_error("bad count " + quoted(parts[1]) + " in " + quoted(text) +
                        " (expected a positive integer)");
    if (lower(parts[2]) != "node")
      return make_error("ppr per " + quoted(parts[2]) + " in " + quoted(text) +
                        " is not supported (use ppr:N:node, or -N N)");
    policy.per_host = static_cast<int>(*n);
    binding.map_by = MapBy::kSlot;
    first_modifier = 3;
  } else {
    return make_error("unknown mapping " + quoted(parts[0]) + " in " + quoted(text) +
                      " (expected slot, node, core, hwthread, numa, socket or ppr:N:node)");
  }
  for (const auto& m : modifiers_of(parts, first_modifier)) {
    std::string l = lower(m);
    if (l.starts_with("pe=")) {
      auto n = parse_int(std::string_view(m).substr(3), 1, 1'000'000);
      if (!n)
        return make_error("bad PE count " + quoted(m) + " in " + quoted(text) +
                          " (expected PE=n, n a positive integer)");
      binding.pe = static_cast<int>(*n);
    } else if (l == "oversubscribe") {
      job.oversubscribe = true;
    } else if (l == "nooversubscribe") {
      job.oversubscribe = false;
    } else if (l == "display") {  // Open MPI prints the job map
      binding.report_bindings = true;
    } else if (l != "span") {
      return make_error("unknown modifier " + quoted(m) + " in " + quoted(text) +
                        " (expected PE=n, OVERSUBSCRIBE, NOOVERSUBSCRIBE, SPAN or DISPLAY)");
    }
  }
  return {};
}

Status apply_rank_by(const std::string& text, PlacementPolicy& policy) {
  auto parts = split(text, ':');
  std::string what = lower(parts[0]);
  if (what == "slot" || what == "core" || what == "hwthread")
    policy.order = RankOrder::kBySlot;
  else if (what == "node")
    policy.order = RankOrder::kByNode;
  else
    return make_error("unknown ranking " + quoted(parts[0]) + " in " + quoted(text) +
                      " (expected slot, node, core or hwthread)");
  for (const auto& m : modifiers_of(parts, 1)) {
    std::string l = lower(m);
    if (l != "span" && l != "fill")
      return make_error("unknown modifier " + quoted(m) + " in " + quoted(text) +
                        " (expected span or fill)");
  }
  return {};
}

Result<std::vector<int>> parse_device_list(const std::string& text) {
  std::vector<int> out;
  for (const auto& item : split(text, ',')) {
    std::string t(trim(item));
    auto n = parse_int(t, 0, 1'000'000);
    if (!n)
      return make_error("bad device index " + quoted(t) + " in " + quoted(text) +
                        " (expected a comma-separated list of indices such as 0,1,2)");
    if (std::find(out.begin(), out.end(), static_cast<int>(*n)) != out.end())
      return make_error("device " + t + " listed twice in " + quoted(text));
    out.push_back(static_cast<int>(*n));
  }
  return out;
}

}  // namespace ferry
