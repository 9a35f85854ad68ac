#pragma once
// Inside the sync part: a cached file copied into a job's copy (file_cache.cpp, spares.cpp).

#include <cstdint>
#include <string>

#include "ferry/common/result.hpp"

namespace ferry::sync_detail {

/// Copies the cached file `from` to `to` with `mode`, and marks `from` used (its access time).
Status copy_out(const std::string& from, const std::string& to, uint32_t mode);

}  // namespace ferry::sync_detail
