#include "ferry/common/read_text_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace ferry {

Result<std::string> read_text_file(const std::string& path, std::size_t limit,
                                   const std::string& what) {
  auto fail = [&path](int err) {
    return make_error(path + ": cannot read: " + std::generic_category().message(err));
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(errno);
  std::string text;
  char buf[8192];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return fail(err);
    }
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > limit) {
      ::close(fd);
      return make_error(path + ": cannot read: larger than " + std::to_string(limit >> 20) +
                        " MiB, not a " + what);
    }
  }
  ::close(fd);
  return text;
}

}  // namespace ferry
