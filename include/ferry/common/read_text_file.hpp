#pragma once
/// \file
/// The one way ferry reads a whole file: hostfiles and job files, kernel files under /proc
/// and /sys, cgroup files and ssh configs. Reads until end of file rather than trusting the
/// size stat reports (0 for /proc and most /sys files), with a bound on what it keeps.

#include <cstddef>
#include <string>

#include "ferry/common/result.hpp"

namespace ferry {

/// The bytes of `path`, or one line: "<path>: cannot read: <reason>", or "<path>: cannot
/// read: larger than <limit>, not a <what>" when the file passes `limit` bytes (the limit
/// as "16 MiB", "64 KiB" or "100 bytes", whichever is exact).
Result<std::string> read_text_file(const std::string& path, std::size_t limit,
                                   const std::string& what);

}  // namespace ferry
