// The journal's files, its readers, and the pump that feeds it from fds 1 and 2.
#include "ferry/session/journal.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

namespace ferry {

namespace {

std::string path_in(const std::string& dir, const char* name) { return dir + "/" + name; }

// The bytes of `path` from `offset` on ("" when missing).
std::string read_from(const std::string& path, uint64_t offset) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return "";
  std::string out;
  char buf[65536];
  auto at = static_cast<off_t>(offset);
  for (;;) {
    const ssize_t n = ::pread(fd.get(), buf, sizeof buf, at);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    at += n;
  }
  return out;
}

// Writes `text` as `dir`/`name` (small status files beside the journal; best effort).
void note_file(const std::string& dir, const char* name, const std::string& text) {
  UniqueFd fd(::open(path_in(dir, name).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (fd) (void)!::write(fd.get(), text.data(), text.size());
}

}  // namespace

Journal::Journal(std::string dir, uint64_t max_bytes, UniqueFd fd, uint64_t size)
    : dir_(std::move(dir)), max_(max_bytes), fd_(std::move(fd)), size_(size) {}

Result<Journal> Journal::open(const std::string& dir, uint64_t max_bytes) {
  const std::string path = path_in(dir, kJournalFile);
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  if (!fd) return make_error(path + ": cannot write: " + std::strerror(errno));
  struct stat st {};
  const uint64_t size = ::fstat(fd.get(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  return Journal(dir, max_bytes, std::move(fd), size);
}

void Journal::rotate() {
  const std::string older = path_in(dir_, kJournalOlderFile);
  struct stat st {};
  if (::stat(older.c_str(), &st) == 0) {
    dropped_ += static_cast<uint64_t>(st.st_size);
    note_file(dir_, kJournalDroppedFile, std::to_string(dropped_) + "\n");
  }
  if (::rename(path_in(dir_, kJournalFile).c_str(), older.c_str()) != 0) {
    error_ = std::string("cannot rotate the journal: ") + std::strerror(errno);
    return;
  }
  auto fresh = open(dir_, max_);
  if (!fresh) {
    error_ = fresh.error().message;
    return;
  }
  fd_ = std::move(fresh->fd_);
  size_ = 0;
}

void Journal::write(std::string_view data) {
  const uint64_t half = max_ / 2;
  while (!data.empty() && error_.empty()) {
    if (max_ > 0 && at_line_start_ && size_ >= half) rotate();
    size_t n = data.size();
    if (max_ > 0 && size_ + n > half) {
      // The segment ends at the first line end at or past its half; the rest goes on in
      // the next one.
      const size_t room = size_ < half ? static_cast<size_t>(half - size_) : 0;
      const size_t nl = data.find('\n', room > 0 ? room - 1 : 0);
      if (nl != std::string_view::npos) n = nl + 1;
    }
    write_raw(data.substr(0, n));
    data.remove_prefix(n);
  }
}

void Journal::write_raw(std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd_.get(), data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error_ = std::string("cannot write the journal: ") + std::strerror(n < 0 ? errno : EIO);
      note_file(dir_, kJournalErrorFile, error_ + "\n");  // may fail too, on a full disk
      return;
    }
    size_ += static_cast<uint64_t>(n);
    at_line_start_ = data[static_cast<size_t>(n) - 1] == '\n';
    data.remove_prefix(static_cast<size_t>(n));
  }
}

std::string read_journal(const std::string& dir) {
  return read_from(path_in(dir, kJournalOlderFile), 0) + read_from(path_in(dir, kJournalFile), 0);
}

uint64_t journal_dropped(const std::string& dir) {
  return std::strtoull(read_from(path_in(dir, kJournalDroppedFile), 0).c_str(), nullptr, 10);
}

std::string_view last_lines(std::string_view text, size_t lines) {
  if (lines == 0) return text.substr(text.size());
  size_t end = text.size();
  if (end > 0 && text[end - 1] == '\n') --end;  // the last line's own newline
  size_t count = 0;
  for (size_t i = end; i > 0; --i)
    if (text[i - 1] == '\n' && ++count == lines) return text.substr(i);
  return text;
}

bool is_rank_line(std::string_view line, int rank) {
  const std::string r = std::to_string(rank);
  for (const std::string& tag : {"[" + r + "]<", "[1," + r + "]<", "[" + r + "@", "[" + r + "] "})
    if (line.starts_with(tag)) return true;
  return false;
}

JournalFollower::JournalFollower(std::string dir, bool from_start) : dir_(std::move(dir)) {
  if (from_start) pending_ = read_from(path_in(dir_, kJournalOlderFile), 0);
  struct stat st {};
  if (::stat(path_in(dir_, kJournalFile).c_str(), &st) == 0) {
    inode_ = st.st_ino;
    offset_ = from_start ? 0 : static_cast<uint64_t>(st.st_size);
  }
}

std::string JournalFollower::poll() {
  std::string out = std::exchange(pending_, std::string());
  struct stat st {};
  if (::stat(path_in(dir_, kJournalFile).c_str(), &st) != 0) return out;
  if (inode_ != 0 && st.st_ino != inode_) {
    // Rotated: the rest of the file we read is now the older segment.
    out += read_from(path_in(dir_, kJournalOlderFile), offset_);
    offset_ = 0;
  }
  inode_ = st.st_ino;
  std::string more = read_from(path_in(dir_, kJournalFile), offset_);
  offset_ += more.size();
  return out + more;
}

// ---- JournalRotator -----------------------------------------------------------------------

JournalRotator::JournalRotator(std::string dir, uint64_t max_bytes)
    : dir_(std::move(dir)), max_(max_bytes) {}

JournalRotator::~JournalRotator() { finish(); }

Status JournalRotator::start() {
  const std::string path = path_in(dir_, kJournalFile);
  file_.reset(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  if (!file_) return make_error(path + ": cannot write: " + std::strerror(errno));
  if (max_ > 0) {
    int p[2];
    notify_.reset(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
    if (!notify_ || ::pipe2(p, O_CLOEXEC) != 0)
      return make_error(std::string("cannot watch the journal: ") + std::strerror(errno));
    stop_in_.reset(p[0]);
    stop_out_.reset(p[1]);
    watch_ = ::inotify_add_watch(notify_.get(), path.c_str(), IN_MODIFY);
    if (watch_ < 0) return make_error(path + ": cannot watch: " + std::strerror(errno));
  }
  if (::dup2(file_.get(), 1) < 0 || ::dup2(file_.get(), 2) < 0)
    return make_error(std::string("cannot move the console into the journal: ") +
                      std::strerror(errno));
  started_ = true;
  if (max_ > 0) thread_ = std::thread([this] { run(); });
  return {};
}

// console.log becomes console.1.log and a fresh one takes fds 1 and 2. False (error_ says
// why) when that fails: the journal then grows on.
bool JournalRotator::rotate() {
  const std::string path = path_in(dir_, kJournalFile), older = path_in(dir_, kJournalOlderFile);
  struct stat st {};
  if (::stat(older.c_str(), &st) == 0) dropped_ += static_cast<uint64_t>(st.st_size);
  UniqueFd fresh;
  if (::rename(path.c_str(), older.c_str()) != 0 ||
      !(fresh = UniqueFd(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600))) ||
      ::dup2(fresh.get(), 1) < 0 || ::dup2(fresh.get(), 2) < 0) {
    error_ = std::string("cannot rotate the journal: ") + std::strerror(errno);
    return false;
  }
  file_ = std::move(fresh);
  trim_older(older);
  note_file(dir_, kJournalDroppedFile, std::to_string(dropped_) + "\n");
  ::inotify_rm_watch(notify_.get(), watch_);
  watch_ = ::inotify_add_watch(notify_.get(), path.c_str(), IN_MODIFY);
  return watch_ >= 0;
}

// When the console wrote faster than this thread was scheduled (a burst on a busy machine),
// the file just moved aside holds more than half the bound: keep its newest half, from the
// start of the line that half begins in. Writes begun before the swap may still land in it: wait
// for its size to stay put first (a write to a file takes microseconds).
void JournalRotator::trim_older(const std::string& older) {
  const uint64_t keep = max_ / 2;
  struct stat st {};
  uint64_t size = 0;
  for (int i = 0; i < 20; ++i) {
    if (::stat(older.c_str(), &st) != 0) return;
    if (i > 0 && static_cast<uint64_t>(st.st_size) == size) break;
    size = static_cast<uint64_t>(st.st_size);
    ::usleep(10000);
  }
  if (size <= keep) return;
  // The newest half, back to the start of the line it begins in (a line of up to 64 KiB; a
  // longer one is cut at its end instead): never less than half the bound is kept.
  const uint64_t back = std::min<uint64_t>(size - keep, uint64_t{64} * 1024);
  std::string tail = read_from(older, size - keep - back);
  const size_t before = back == 0 ? std::string::npos : tail.rfind('\n', back - 1);
  if (before != std::string::npos) {
    tail.erase(0, before + 1);
  } else if (back < size - keep) {
    const size_t after = tail.find('\n', back);
    tail.erase(0, after == std::string::npos ? tail.size() : after + 1);
  }
  const std::string part = older + ".part";
  UniqueFd out(::open(part.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!out || ::write(out.get(), tail.data(), tail.size()) != static_cast<ssize_t>(tail.size()) ||
      ::rename(part.c_str(), older.c_str()) != 0) {
    ::unlink(part.c_str());
    return;  // the journal keeps more than asked, nothing is lost
  }
  dropped_ += size - tail.size();
}

void JournalRotator::run() {
  pollfd fds[2] = {{notify_.get(), POLLIN, 0}, {stop_in_.get(), POLLIN, 0}};
  char events[4096];
  for (;;) {
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) return;
    if (fds[1].revents != 0) return;
    while (::read(notify_.get(), events, sizeof events) > 0) {
    }
    struct stat st {};
    if (::fstat(file_.get(), &st) == 0 && static_cast<uint64_t>(st.st_size) >= max_ / 2 &&
        !rotate())
      return;
  }
}

std::pair<std::string, uint64_t> JournalRotator::finish() {
  if (started_) {
    started_ = false;
    if (thread_.joinable()) {
      const char one = 1;
      (void)!::write(stop_out_.get(), &one, 1);
      thread_.join();
      // What came since the thread last looked (a burst the console ended with, before the
      // thread's turn) is bounded like the rest.
      struct stat st {};
      if (error_.empty() && ::fstat(file_.get(), &st) == 0 &&
          static_cast<uint64_t>(st.st_size) >= max_ / 2)
        (void)rotate();
    }
    const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0) {
      ::dup2(null, 1);
      ::dup2(null, 2);
      ::close(null);
    }
  }
  return {error_, dropped_};
}

// ---- JournalPump ---------------------------------------------------------------------------

JournalPump::JournalPump(Journal journal, bool tee_terminal)
    : journal_(std::move(journal)), tee_(tee_terminal) {}

JournalPump::~JournalPump() { finish(); }

Status JournalPump::start() {
  auto fail = [this](const std::string& what) {
    const std::string why = std::strerror(errno);
    for (Stream& s : streams_) ::close(s.in);
    streams_.clear();
    return make_error(what + ": " + why);
  };
  int stop[2];
  if (::pipe2(stop, O_CLOEXEC) != 0) return fail("cannot make the journal's pipe");
  stop_in_ = stop[0];
  stop_fd_ = stop[1];
  // Detached: one pipe for both, in the order they were written. --nohup: one each, each
  // also to the terminal's own fd.
  for (int fd : tee_ ? std::vector<int>{1, 2} : std::vector<int>{1}) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return fail("cannot make the journal's pipe");
    Stream s{p[0], tee_ ? ::fcntl(fd, F_DUPFD_CLOEXEC, 3) : -1};
    streams_.push_back(s);
    const bool moved = ::dup2(p[1], fd) >= 0 && (tee_ || ::dup2(p[1], 2) >= 0);
    ::close(p[1]);
    if (!moved) return fail("cannot move the console into the journal");
  }
  started_ = true;
  thread_ = std::thread([this] { run(); });
  return {};
}

void JournalPump::put(Stream& s, std::string_view data) {
  journal_.write(data);
  // The terminal, while it takes writes; once it is gone (hangup: EIO) only the journal.
  while (s.tee >= 0 && !data.empty()) {
    const ssize_t w = ::write(s.tee, data.data(), data.size());
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      ::close(s.tee);
      s.tee = -1;
      break;
    }
    data.remove_prefix(static_cast<size_t>(w));
  }
}

// What `s` holds now; false at its end (or an error).
bool JournalPump::drain_once(Stream& s) {
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(s.in, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    put(s, std::string_view(buf, static_cast<size_t>(n)));
    return true;
  }
}

void JournalPump::run() {
  std::vector<pollfd> fds;
  for (const Stream& s : streams_) fds.push_back({s.in, POLLIN, 0});
  fds.push_back({stop_in_, POLLIN, 0});
  size_t open = streams_.size();
  while (open > 0) {
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds.back().revents != 0) break;  // finish(): drain below
    for (size_t i = 0; i < streams_.size(); ++i)
      if (fds[i].revents != 0 && fds[i].fd >= 0 && !drain_once(streams_[i])) {
        fds[i].fd = -1;  // poll skips it
        --open;
      }
  }
  // Everything this process wrote is in the pipes by now; a child that kept fd 1 or 2 open
  // must not keep the pump waiting for an end of file.
  for (Stream& s : streams_) {
    ::fcntl(s.in, F_SETFL, ::fcntl(s.in, F_GETFL) | O_NONBLOCK);
    while (drain_once(s)) {
    }
  }
}

std::pair<std::string, uint64_t> JournalPump::finish() {
  if (started_) {
    started_ = false;
    // fds 1 and 2 go to /dev/null, then the thread drains what is left and ends.
    const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0) {
      ::dup2(null, 1);
      ::dup2(null, 2);
      ::close(null);
    }
    const char one = 1;
    (void)!::write(stop_fd_, &one, 1);
    if (thread_.joinable()) thread_.join();
    for (Stream& s : streams_) {
      ::close(s.in);
      if (s.tee >= 0) ::close(s.tee);
    }
    streams_.clear();
    ::close(stop_fd_);
    ::close(stop_in_);
    stop_fd_ = stop_in_ = -1;
  }
  return {journal_.error(), journal_.dropped()};
}

}  // namespace ferry
