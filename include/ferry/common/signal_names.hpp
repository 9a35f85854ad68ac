#pragma once
// Signal names as users read them ("TERM" for SIGTERM), from ferry's own table: glibc's
// sigabbrev_np came with 2.32, and ferry's programs run on 2.31 (cmake/portable.cmake).

namespace ferry {

/// The name of Linux signal `sig` without "SIG" ("TERM", "KILL"), or nullptr for a real-time
/// signal or a number that names no signal: what glibc's sigabbrev_np gives.
const char* signal_abbrev(int sig);

}  // namespace ferry
