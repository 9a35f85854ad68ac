#pragma once
/// \file
/// Reaps a child process without blocking the io_context that waits for it.

#include <sys/types.h>

#include <asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <optional>

namespace ferry {

/// Gets a child's wait status (as waitpid gives it), or nullopt when the child was still
/// running after the limit or is not ours to wait for.
using ReapHandler = std::function<void(std::optional<int> wait_status)>;

/// Waits for child `pid` on `io` and reaps it: through a pidfd watched by asio where the
/// kernel has pidfd_open, else by a WNOHANG poll on a timer (1 ms, doubling to 50 ms).
/// Never sleeps on the loop. `done` (may be empty) runs once: inline when the child has
/// already exited, else from `io`; after `limit` the wait is given up. The wait lives on its
/// own until then, so the caller may go away (its handler must then not touch it).
void async_reap(asio::io_context& io, pid_t pid, std::chrono::milliseconds limit, ReapHandler done);

}  // namespace ferry
