#pragma once
// What the job tests share: a sink that drops the ranks' output, and the whole text of a
// diagnostics file.

#include <unistd.h>

#include <string>
#include <string_view>

#include "ferry/output/sink.hpp"

namespace ferry {

class NullSink : public OutputSink {
 public:
  void write(int, StreamId, std::string_view) override {}
  void close_stream(int, StreamId) override {}
  void flush() override {}
};

/// Everything written to `fd` (a temporary file the diagnostics went to), from its start.
inline std::string read_all(int fd) {
  std::string s;
  ::lseek(fd, 0, SEEK_SET);
  char buf[4096];
  ssize_t n = 0;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) s.append(buf, static_cast<size_t>(n));
  return s;
}

}  // namespace ferry
