// reopen_closed_standard_fds, in a child whose fds 0-2 are closed the way a shell's `<&-`,
// `>&-` and `2>&-` close them.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ferry/common/standard_fds.hpp"

namespace ferry {
namespace {

// In a child: closes `closed` (a bit per fd 0-2), reopens, then opens an eventfd as the
// loop does. Exit status: 0 when every fd 0-2 is /dev/null or untouched and the eventfd
// is above 2; 1 when the eventfd took a standard fd; 2 when a reopened fd is not /dev/null.
int run_child(int closed, bool reopen) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (int fd = 0; fd <= 2; ++fd)
      if (closed & (1 << fd)) ::close(fd);
    if (reopen && !reopen_closed_standard_fds()) _exit(3);
    const int efd = ::eventfd(0, EFD_CLOEXEC);
    if (efd <= 2) _exit(1);
    struct stat null_st {
    }, st{};
    ::stat("/dev/null", &null_st);
    for (int fd = 0; fd <= 2; ++fd) {
      if (!(closed & (1 << fd))) continue;
      if (::fstat(fd, &st) != 0 || st.st_rdev != null_st.st_rdev) _exit(2);
      const int mode = ::fcntl(fd, F_GETFL) & O_ACCMODE;
      if (mode != (fd == 0 ? O_RDONLY : O_WRONLY)) _exit(2);
    }
    _exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(StandardFds, ClosedStdinStdoutStderrBecomeDevNull) {
  for (int closed : {1, 2, 4, 3, 5, 6, 7}) {
    SCOPED_TRACE(closed);
    EXPECT_EQ(run_child(closed, true), 0);
  }
}

TEST(StandardFds, WithoutItTheLoopsEventfdTakesAClosedStandardFd) {
  // What the helper prevents: the first fd opened lands on the closed one.
  EXPECT_EQ(run_child(1, false), 1);
  EXPECT_EQ(run_child(0, true), 0);  // nothing closed: nothing changes
}

}  // namespace
}  // namespace ferry
