#include "ferry/frontend/diagnostics.hpp"

#include <unistd.h>

#include <cerrno>

namespace ferry {

void Diagnostics::raw(const std::string& text) {
  if (out_) out_->flush();
  size_t off = 0;
  while (off < text.size()) {
    ssize_t n = ::write(fd_, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

}  // namespace ferry
