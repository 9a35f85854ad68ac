#pragma once
/// \file
/// Per-rank values in the command's arguments (--expand-args): `{rank}`, `{local_rank}`,
/// `{node_rank}`, `{world_size}`, `{master_addr}`, `{master_port}`; `{{` and `}}` are
/// literal braces.

#include <string>
#include <vector>

#include "ferry/common/result.hpp"

namespace ferry {

/// The values one rank's placeholders take.
struct PlaceholderValues {
  int rank = 0;
  int local_rank = 0;
  int node_rank = 0;
  int world_size = 0;
  std::string master_addr;
  std::string master_port;
};

/// Checks `args` before the job starts: an unknown name or a '{' without its '}' is an error
/// naming the argument ("--expand-args: unknown placeholder {rnak} in '--x={rnak}' (known:
/// ...; {{ for a literal brace)").
Status check_placeholders(const std::vector<std::string>& args);

/// `arg` with its placeholders replaced. Assumes check_placeholders passed: anything it would
/// refuse is kept as written.
std::string expand_placeholders(const std::string& arg, const PlaceholderValues& v);

}  // namespace ferry
