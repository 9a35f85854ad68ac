#pragma once
/// \file
/// Reading a whole small text file (hostfile, job file) with a size bound.

#include <cstddef>
#include <string>

#include "ferry/common/result.hpp"

namespace ferry {

/// The bytes of `path`, or one line: "<path>: cannot read: <reason>", or "<path>: cannot
/// read: larger than <limit MiB> MiB, not a <what>" when the file passes `limit` bytes.
Result<std::string> read_text_file(const std::string& path, std::size_t limit,
                                   const std::string& what);

}  // namespace ferry
