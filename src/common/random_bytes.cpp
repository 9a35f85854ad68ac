#include "ferry/common/random_bytes.hpp"

#include <sys/random.h>
#include <sys/types.h>

#include <cerrno>
#include <cstring>

namespace ferry {

Result<std::string> random_bytes(std::size_t n) {
  std::string s(n, '\0');
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = ::getrandom(s.data() + got, n - got, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0)
      return make_error(std::string("no random bytes from the system: ") + std::strerror(errno));
    got += static_cast<std::size_t>(r);
  }
  return s;
}

std::string hex_text(std::string_view raw) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  s.reserve(2 * raw.size());
  for (const unsigned char c : raw) {
    s.push_back(kDigits[c >> 4]);
    s.push_back(kDigits[c & 15]);
  }
  return s;
}

}  // namespace ferry
