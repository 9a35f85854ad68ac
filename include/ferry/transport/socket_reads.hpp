#pragma once
/// \file
/// Large reads for libssh's sockets. libssh 0.10 reads its socket 4 KiB per recv(2),
/// each after a poll(2): two system calls per 4 KiB, most of the front end's work per
/// byte of rank output. The ferryrun executable defines recv() and poll() itself
/// (socket_reads_interposer.cpp, compiled into it alone), so libssh's calls reach them: for a
/// socket attached here, recv() is served from a 256 KiB buffer filled by one real recv, and poll()
/// reports it readable while the buffer holds bytes, without a system call. Every other fd, and
/// every other caller, gets the C library's functions unchanged.
///
/// Bytes in the buffer are announced by no fd readiness: whoever drives libssh by
/// readiness must check buffered() before waiting (SshSession::arm does).

#include <poll.h>
#include <sys/types.h>

#include <cstddef>

namespace ferry::socket_reads {

/// Reads of `fd` go through a buffer from now on (the fd must be a stream socket). Any
/// thread may attach its sockets; an attached fd is read, detached and asked about by
/// that thread only.
void attach(int fd);
/// Back to plain reads; bytes still buffered are dropped (the connection is ending).
void detach(int fd);
/// Bytes read from `fd` and not yet handed to its reader; 0 when not attached.
std::size_t buffered(int fd);
/// Whether the reader has bytes queued to write on `fd`: while it has, poll() asks the
/// kernel whether `fd` is writable (POLLOUT) even when buffered bytes answer POLLIN.
void writes_pending(int fd, bool pending);

/// recv(2) and poll(2) as described above: what the executable's own recv() and poll() call.
ssize_t recv_through(int fd, void* buf, size_t n, int flags);
int poll_through(pollfd* fds, nfds_t n, int timeout);

}  // namespace ferry::socket_reads
