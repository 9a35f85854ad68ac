#include "ferry/frontend/diagnostics.hpp"

#include <unistd.h>

#include <cerrno>

namespace ferry {

void Diagnostics::raw(const std::string& text) {
  if (writer_) {
    // One call per line: the writer takes whole lines.
    size_t start = 0;
    while (start < text.size()) {
      size_t nl = text.find('\n', start);
      size_t end = nl == std::string::npos ? text.size() : nl;
      writer_(text.substr(start, end - start));
      start = end + 1;
    }
    if (out_) out_->flush();
    return;
  }
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
