#include "ferry/common/standard_fds.hpp"

#include <fcntl.h>
#include <unistd.h>

namespace ferry {

bool reopen_closed_standard_fds() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) >= 0) continue;
    // open() takes the lowest free number: this one, since the lower ones are open.
    const int got = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
    if (got < 0) return false;
    if (got != fd) {
      ::dup2(got, fd);
      ::close(got);
    }
  }
  return true;
}

}  // namespace ferry
