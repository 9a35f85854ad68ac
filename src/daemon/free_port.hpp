#pragma once
// Private to src/daemon/: a port for the job's rendezvous (MASTER_PORT's default).

#include <cstdint>

namespace ferry {

/// A TCP port that is free on this host now (the kernel's pick for a socket bound to port 0),
/// or 0 when none could be had.
uint16_t find_free_port();

}  // namespace ferry
