#pragma once
/// \file
/// The directory of per-rank files (`--output-filename`), checked and made before a job
/// starts: ferryrun often runs as root, and a directory another user controls would let
/// that user point a rank's file anywhere (a planted symlink, a swapped directory).

#include <string>

#include "ferry/common/result.hpp"

namespace ferry {

/// Makes `dir` ready for per-rank files: creates the directories that are missing (mode
/// 0700), then checks that files can be created in it (one is made and removed). Refuses,
/// in an Error naming the directory and why:
/// - a path that is not a directory, or that cannot be created or written;
/// - any directory on the path writable by every user without the sticky bit;
/// - `dir` itself, or a directory on its path below a world-writable sticky directory
///   (`/tmp`), owned by another user than this one or root, or writable by another user
///   (world-writable, or group-writable with a group not this process's).
Status prepare_output_dir(const std::string& dir);

}  // namespace ferry
