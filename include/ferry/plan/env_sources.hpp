#pragma once
/// \file
/// Where exported variables come from besides `-x NAME`: name patterns (`-x 'NCCL_*'`)
/// matched against this environment, and env files (`--env-file`: KEY=VALUE lines).

#include <string>
#include <vector>

#include "ferry/common/result.hpp"

namespace ferry {

/// True when `item` ("NAME", "NAME=value" or a pattern) is a pattern: its name part holds
/// '*', '?' or '['.
bool is_export_pattern(const std::string& item);

/// Replaces each pattern item of `items` by the names of `environ_list` it matches
/// (fnmatch(3), in the environment's order), keeping other items as they are. A pattern that
/// matches nothing adds a warning to `warnings`; a pattern with '=' is an error.
Result<std::vector<std::string>> expand_export_patterns(const std::vector<std::string>& items,
                                                        char** environ_list,
                                                        std::vector<std::string>& warnings);

/// An env file's variables as "K=V" (or "K" to take from this environment): one KEY=VALUE
/// a line, `export ` before it allowed, blank lines and lines starting with '#' skipped;
/// the value is taken as written (no quotes removed, no expansion) except that a value in
/// matching single or double quotes loses them. `file` names the file in errors
/// ("vars.env:3: 'A B=1' is not KEY=VALUE").
Result<std::vector<std::string>> parse_env_file(const std::string& text, const std::string& file);

/// Reads and parses an env file (at most 1 MiB).
Result<std::vector<std::string>> read_env_file(const std::string& path);

}  // namespace ferry
