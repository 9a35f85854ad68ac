#include "ferry/common/read_text_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

#include "ferry/common/posix_handles.hpp"

namespace ferry {
namespace {

std::string size_text(std::size_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= (1u << 10) && bytes % (1u << 10) == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
}

}  // namespace

Result<std::string> read_text_file(const std::string& path, std::size_t limit,
                                   const std::string& what) {
  auto fail = [&path](int err) {
    return make_error(path + ": cannot read: " + std::generic_category().message(err));
  };
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return fail(errno);
  std::string text;
  // A regular file's size, known ahead: read straight into a string of that size (and a byte
  // more, to see a file that grew), not in pieces appended to a doubling string: for a file of
  // a few hundred KiB, two reads instead of forty, and no copy. (The largest files a launch
  // reads, a synced tree's hash index and a spare's stamps, are mapped instead: MappedFile.)
  struct stat st {};
  if (::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    text.resize(std::min(static_cast<std::size_t>(st.st_size), limit) + 1);
    std::size_t got = 0;
    while (got < text.size()) {
      ssize_t n = ::read(fd.get(), text.data() + got, text.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return fail(errno);
      if (n == 0) break;
      got += static_cast<std::size_t>(n);
    }
    const bool at_end = got < text.size();
    text.resize(got);
    if (at_end) return text;
    if (text.size() > limit)
      return make_error(path + ": cannot read: larger than " + size_text(limit) + ", not a " +
                        what);
  }
  char buf[8192];
  while (true) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(errno);
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > limit) {
      return make_error(path + ": cannot read: larger than " + size_text(limit) + ", not a " +
                        what);
    }
  }
  return text;
}

}  // namespace ferry
