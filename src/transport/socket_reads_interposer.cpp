// ferryrun's own recv() and poll(): compiled into the ferryrun executable only (not into the
// library, so no other binary that links it, ferryd included, has its libc calls taken). The
// dynamic linker searches the executable first, so libssh's calls reach these, which serve
// the sockets attached to socket_reads from its buffer and pass everything else to the C
// library (socket_reads.hpp).

#include <poll.h>
#include <sys/types.h>

#include "ferry/transport/socket_reads.hpp"

extern "C" ssize_t recv(int fd, void* buf, size_t n, int flags) {
  return ferry::socket_reads::recv_through(fd, buf, n, flags);
}

// NOLINTNEXTLINE(readability-inconsistent-declaration-parameter-name): glibc names them __fds...
extern "C" int poll(pollfd* fds, nfds_t n, int timeout) {
  return ferry::socket_reads::poll_through(fds, n, timeout);
}
