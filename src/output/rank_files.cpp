#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "console_parts.hpp"
#include "ferry/output/console_output.hpp"

namespace ferry {

std::string rank_file_path(const OutputOptions& options, int rank, StreamId stream) {
  char buf[64];
  if (options.layout == FileLayout::kOpenMpi) {
    // Open MPI 4.1 pads to the digits of the rank count (10 ranks: rank.00..rank.09;
    // checked against mpirun.openmpi 4.1.4 --output-filename).
    const int digits = std::snprintf(nullptr, 0, "%d", std::max(options.world_size, 1));
    std::snprintf(buf, sizeof buf, "/1/rank.%0*d/%s", digits, rank, stream_name(stream));
  } else {
    // horovodrun pads to the digits of the last rank (10 ranks: rank.0..rank.9).
    const int digits = std::snprintf(nullptr, 0, "%d", std::max(options.world_size - 1, 0));
    std::snprintf(buf, sizeof buf, "/rank.%0*d/%s", digits, rank, stream_name(stream));
  }
  std::string dir = options.output_dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir + buf;
}

namespace {

// The directories above `path`'s file, made as needed (0700: only this user reads the job's
// output by default). Past `inside` (the output directory's own path) a symlink in their
// place is refused (ELOOP): rank.N and 1/ are ferry's. 0 or an errno.
int make_parent_dirs(const std::string& path, size_t inside) {
  for (size_t slash = path.find('/', 1); slash != std::string::npos;
       slash = path.find('/', slash + 1)) {
    const std::string dir = path.substr(0, slash);
    if (dir.back() == '/' || ::mkdir(dir.c_str(), 0700) == 0) continue;
    if (errno != EEXIST) return errno;
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0) return errno;
    if (S_ISLNK(st.st_mode) && (slash > inside || ::stat(dir.c_str(), &st) != 0)) return ELOOP;
    if (!S_ISDIR(st.st_mode)) return ENOTDIR;
  }
  return 0;
}

}  // namespace

void ConsoleOutput::write_file(StreamState& s, std::string_view bytes) {
  if (s.file_state == StreamState::File::kFailed) return;
  if (!s.file && !open_file(s)) return;
  s.file->append(bytes);
  s.file_line_ended = bytes.back() == '\n';
  if (s.file->error() != 0) file_error(s, "write", s.file->error());
}

bool ConsoleOutput::open_file(StreamState& s) {
  const std::string path = rank_file_path(options_, s.rank, s.stream);
  std::string dir = options_.output_dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (const int err = make_parent_dirs(path, dir.size()); err != 0) {
    file_error(s, "create directory for", err);
    return false;
  }
  // Reopened after close_stream (more bytes came, or the job runs again): append rather than
  // truncate. A job's first attempt starts every file afresh.
  const bool append = s.file_state == StreamState::File::kClosed || attempt_ > 0;
  const int mode = append ? O_APPEND : O_TRUNC;
  // Never through a symlink: the file is the rank's output, not what a link points at.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | mode, 0644);
  if (fd < 0) {
    file_error(s, "open", errno);
    return false;
  }
  s.file = std::make_unique<FdWriter>(fd, kFileBuffer, true);
  s.file_state = StreamState::File::kOpen;
  if (attempt_ > 0 && s.file_attempt != attempt_) {
    const std::string marker = std::string(s.file_line_ended ? "" : "\n") + "--- ferry: attempt " +
                               std::to_string(attempt_) + " ---\n";
    s.file->append(marker);
    s.file_attempt = attempt_;
    s.file_line_ended = true;
  }
  return true;
}

void ConsoleOutput::file_error(StreamState& s, const std::string& what, int err) {
  s.file.reset();
  s.file_state = StreamState::File::kFailed;
  if (file_warned_) return;
  file_warned_ = true;
  warn("cannot " + what + " output file " + rank_file_path(options_, s.rank, s.stream) + ": " +
       std::strerror(err) +
       " (that rank's output still goes to the console; further "
       "output-file errors are not reported)");
}

}  // namespace ferry
