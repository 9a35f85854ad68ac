// socket_reads: an attached socket is read through a large buffer by the recv() and
// poll() libssh calls; bytes come out whole and in order, poll() calls buffered bytes
// readable, and a detached socket (or any other fd) is read as before.
#include "ferry/transport/socket_reads.hpp"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

namespace ferry {
namespace {

struct Pair {
  int fd[2] = {-1, -1};
  Pair() { EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fd), 0); }
  ~Pair() {
    socket_reads::detach(fd[0]);
    ::close(fd[0]);
    ::close(fd[1]);
  }
};

TEST(SocketReads, AttachedSocketIsReadInOrderThroughTheBuffer) {
  Pair p;
  socket_reads::attach(p.fd[0]);
  std::string sent;
  for (int i = 0; sent.size() < 150000; ++i) sent += std::to_string(i) + ",";
  ASSERT_EQ(::write(p.fd[1], sent.data(), sent.size()), static_cast<ssize_t>(sent.size()));
  std::string got;
  char buf[4096];
  for (;;) {
    pollfd pf{p.fd[0], POLLIN | POLLOUT, 0};
    if (::poll(&pf, 1, 0) <= 0 || !(pf.revents & POLLIN)) break;
    ssize_t n = ::recv(p.fd[0], buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
    if (!got.empty() && got.size() < sent.size()) {
      // The first recv took everything there was; the rest waits in the buffer.
      EXPECT_EQ(socket_reads::buffered(p.fd[0]), sent.size() - got.size());
    }
  }
  EXPECT_EQ(got, sent);
  EXPECT_EQ(::recv(p.fd[0], buf, sizeof buf, 0), -1);
  EXPECT_EQ(errno, EAGAIN);
}

TEST(SocketReads, DetachedAndOtherFdsReadPlainly) {
  Pair p;
  ASSERT_EQ(::write(p.fd[1], "abcdef", 6), 6);
  char buf[2];
  EXPECT_EQ(::recv(p.fd[0], buf, 2, 0), 2);  // never attached: the C library's recv
  EXPECT_EQ(socket_reads::buffered(p.fd[0]), 0u);
  socket_reads::attach(p.fd[0]);
  EXPECT_EQ(::recv(p.fd[0], buf, 2, 0), 2);  // "cd", and "ef" buffered
  EXPECT_EQ(std::string(buf, 2), "cd");
  EXPECT_EQ(socket_reads::buffered(p.fd[0]), 2u);
  socket_reads::detach(p.fd[0]);
  EXPECT_EQ(socket_reads::buffered(p.fd[0]), 0u);
  pollfd pf{p.fd[0], POLLIN, 0};
  EXPECT_EQ(::poll(&pf, 1, 0), 0);  // the buffered bytes went with the detach
}

}  // namespace
}  // namespace ferry
