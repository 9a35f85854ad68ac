#include "ferry/frontend/diagnostics.hpp"

#include <unistd.h>

#include <cerrno>

namespace ferry {

void Diagnostics::write_fd(const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = ::write(fd_, bytes.data() + off, bytes.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

void Diagnostics::progress(const std::string& text) {
  if (!progress_allowed_) return;
  write_fd("\r" + text + "\x1b[K");
  progress_up_ = true;
}

void Diagnostics::end_progress() {
  if (progress_up_) write_fd("\r\x1b[K");
  progress_up_ = false;
}

void Diagnostics::raw(const std::string& text) {
  if (progress_up_) {
    end_progress();
    progress_allowed_ = false;
  }
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
