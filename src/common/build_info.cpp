// The commit comes from a header written at every build (cmake/build_info.cmake), included
// by this file alone: a new commit recompiles one file.
#include "ferry/common/build_info.hpp"

#include "ferry_commit.h"

namespace ferry {

const char* build_commit() { return FERRY_COMMIT; }

std::string version_text() {
  return std::string(FERRY_VERSION) + " (commit " + build_commit() + ")";
}

}  // namespace ferry
