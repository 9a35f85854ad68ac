#pragma once
/// \file
/// What every binary's --version says: ferry's version and the commit it was built from.

#include <string>

namespace ferry {

/// The short hash of the commit the binaries were built from ("1a2b3c4d5e6f", with "-dirty"
/// when the tree had changes; "unknown" for a build outside git that named none).
const char* build_commit();

/// "0.1.0 (commit 1a2b3c4d5e6f)": what follows the program's name in --version.
std::string version_text();

}  // namespace ferry
