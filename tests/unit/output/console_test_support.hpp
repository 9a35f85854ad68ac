#pragma once
// Test support for the console tests: in-memory stand-ins for the console's fds, a console
// wired to them that collects its warnings, and temporary directories for per-rank files.

#include <sys/mman.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ferry/output/console_output.hpp"

namespace ferry::test_support {

namespace fs = std::filesystem;

// An in-memory file standing in for the console's stdout or stderr.
class Capture {
 public:
  Capture() : fd_(::memfd_create("capture", MFD_CLOEXEC)) {}
  ~Capture() { ::close(fd_); }
  int fd() const { return fd_; }
  std::string text() const {
    std::string out;
    char buf[65536];
    off_t off = 0;
    ssize_t n;
    while ((n = ::pread(fd_, buf, sizeof buf, off)) > 0) {
      out.append(buf, static_cast<std::size_t>(n));
      off += n;
    }
    return out;
  }

 private:
  int fd_;
};

struct Console {
  explicit Console(OutputOptions o = {}) : out(std::move(o), cout.fd(), cerr.fd()) {
    out.set_warn([this](const std::string& w) { warnings.push_back(w); });
  }
  std::vector<std::string> warnings;
  Capture cout, cerr;
  ConsoleOutput out;
};

inline OutputOptions with_tag(TagStyle tag) {
  OutputOptions o;
  o.tag = tag;
  return o;
}

inline std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/ferry_output_test.XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  fs::path path;
};

// Options whose per-rank files cannot be written: the output directory is a regular file
// in `dir`, so no directory can be made under it.
inline OutputOptions unwritable_files(const TempDir& dir) {
  const fs::path blocker = dir.path / "file";
  std::ofstream(blocker) << "x";
  OutputOptions o;
  o.output_dir = blocker.string();
  return o;
}

}  // namespace ferry::test_support
