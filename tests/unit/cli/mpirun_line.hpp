#pragma once
/// \file
/// What the mpirun personality's tests share: a command line parsed as `mpirun` (or
/// `mpiexec`) would parse it, and a look-up in the exports.

#include <algorithm>
#include <string>
#include <vector>

#include "ferry/cli/ferryrun_cli.hpp"

namespace ferry::testing_mpirun {

inline ParseOutcome mpi(std::vector<std::string> args, const char* argv0 = "mpirun") {
  args.insert(args.begin(), argv0);
  return parse_ferryrun_args(args);
}

inline bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace ferry::testing_mpirun
