#pragma once
// A call that may never return, made at a process's end: waited for at most a limit.

#include <chrono>
#include <functional>

namespace ferry {

/// Runs `f` on a thread of its own and waits at most `limit` for it. True when it returned
/// (the thread is joined); false when it did not: the thread is left running, detached, and
/// whatever `f` uses must outlive the process (for a library's shutdown call, say). The
/// process should then end with _exit: its static objects may still be in use there.
bool call_within(std::function<void()> f, std::chrono::milliseconds limit);

}  // namespace ferry
