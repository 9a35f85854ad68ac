#pragma once
/// \file
/// Pipes and /dev/null for starting processes, their fds owned (UniqueFd, common/).

#include <utility>

#include "ferry/common/posix_handles.hpp"
#include "ferry/common/result.hpp"

namespace ferry {

/// Both ends of a pipe.
struct Pipe {
  UniqueFd read;
  UniqueFd write;
};

/// A pipe whose ends are close-on-exec (a child gets an end only as one of its stdio fds or
/// through SpawnRequest::keep_fds). Error: "pipe: <reason>".
Result<Pipe> make_pipe();

/// /dev/null opened read-only and close-on-exec; an empty UniqueFd if it cannot be opened.
UniqueFd open_dev_null();

}  // namespace ferry
