#pragma once
/// \file
/// What the ferryrun personality's tests share: a command line parsed as `ferryrun` would
/// parse it, and a file of the tests' own to name on it.

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "ferry/cli/ferryrun_cli.hpp"

namespace ferry::testing_cli {

inline ParseOutcome ferryrun(std::vector<std::string> args) {
  args.insert(args.begin(), "ferryrun");
  return parse_ferryrun_args(args);
}

/// Writes `text` to `name` in the test's temporary folder; returns its path.
inline std::string temp_file(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

}  // namespace ferry::testing_cli
