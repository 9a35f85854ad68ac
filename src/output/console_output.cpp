#include "ferry/output/console_output.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>

namespace ferry {
namespace {

// Writes all of [p, p+n) to fd, over partial writes, EINTR and EAGAIN (a non-blocking fd
// is waited on with poll). Returns 0 or the errno that stopped it.
int write_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w > 0) {
      p += w;
      n -= static_cast<std::size_t>(w);
    } else if (w < 0 && errno == EINTR) {
      continue;
    } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd pfd{fd, POLLOUT, 0};
      while (::poll(&pfd, 1, -1) < 0 && errno == EINTR) {
      }
    } else {
      return w < 0 ? errno : EIO;
    }
  }
  return 0;
}

// A buffered writer on one fd. Appends that do not fit flush first; appends at least a
// buffer long go straight to the fd, so payload is copied at most once. After an error it
// drops everything.
class FdWriter {
 public:
  FdWriter(int fd, std::size_t capacity, bool owns_fd)
      : fd_(fd), cap_(std::max<std::size_t>(capacity, 1)), owns_(owns_fd) {}
  ~FdWriter() {
    if (owns_ && fd_ >= 0) ::close(fd_);
  }
  FdWriter(const FdWriter&) = delete;
  FdWriter& operator=(const FdWriter&) = delete;

  void append(const char* p, std::size_t n) {
    if (n <= cap_ - size_ && buf_) {
      std::memcpy(buf_.get() + size_, p, n);
      size_ += n;
      return;
    }
    append_slow(p, n);
  }
  void append(std::string_view s) { append(s.data(), s.size()); }
  // The next `n` bytes are one line: flush first if they would straddle a full buffer, so
  // that each write(2) ends at a line end (other writers to a shared terminal then cannot
  // split our lines either).
  void keep_together(std::size_t n) {
    if (n > cap_ - size_ && n <= cap_) flush();
  }

  void flush() {
    if (size_ > 0 && error_ == 0) error_ = write_all(fd_, buf_.get(), size_);
    size_ = 0;
  }
  std::size_t size() const { return size_; }
  int error() const { return error_; }
  int fd() const { return fd_; }

 private:
  void append_slow(const char* p, std::size_t n) {
    if (error_ != 0) return;
    if (!buf_) buf_ = std::make_unique<char[]>(cap_);
    if (n > cap_ - size_) flush();
    if (n >= cap_) {
      if (error_ == 0) error_ = write_all(fd_, p, n);
      return;
    }
    std::memcpy(buf_.get() + size_, p, n);
    size_ += n;
  }

  int fd_;
  std::size_t cap_;
  bool owns_;
  std::unique_ptr<char[]> buf_;  // allocated on first use: most per-rank files stay small
  std::size_t size_ = 0;
  int error_ = 0;
};

constexpr std::size_t kFileBuffer = 16 * 1024;
constexpr std::size_t kKeepQueueCapacity = 1 << 20;

// Appends to a std::string with FdWriter's interface, for lines held back in a queue.
struct StringOut {
  std::string& s;
  void keep_together(std::size_t) {}
  void append(const char* p, std::size_t n) { s.append(p, n); }
  void append(std::string_view v) { s.append(v); }
};

bool same_open_file(int a, int b) {
  if (a == b) return true;
  struct stat sa;
  struct stat sb;
  if (::fstat(a, &sa) != 0 || ::fstat(b, &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

const char* stream_name(StreamId stream) {
  return stream == StreamId::kStderr ? "stderr" : "stdout";
}

}  // namespace

// One console fd: its write buffer, the stream holding it mid-line, and what waits.
struct ConsoleOutput::Destination {
  Destination(int fd, std::size_t buffer) : out(fd, buffer, false) {}
  FdWriter out;
  StreamState* holder = nullptr;
  std::string queue;                  // whole tagged lines of others, held back
  std::vector<StreamState*> waiters;  // streams with an over-cap line, first come first
  bool reported = false;
};

// One (rank, stream).
struct ConsoleOutput::StreamState {
  StreamState(std::size_t cap) : assembler(cap) {}
  int rank = 0;
  StreamId stream = StreamId::kStdout;
  LineAssembler assembler;
  std::string tag;
  Destination* dest = nullptr;
  bool waiting = false;  // in dest->waiters
  enum class File { kNone, kOpen, kClosed, kFailed } file_state = File::kNone;
  std::unique_ptr<FdWriter> file;
};

// Adapts LineAssembler's callbacks to one stream of this ConsoleOutput.
struct ConsoleOutput::Handler {
  ConsoleOutput& c;
  StreamState& s;
  void lines(std::string_view held, std::string_view body) { c.emit_lines(s, held, body); }
  bool overflow(std::string_view held, std::string_view tail) { return c.take(s, held, tail); }
  void more(std::string_view bytes, bool ended) { c.pass(s, bytes, ended); }
  void end_unterminated(std::string_view held, bool mid) { c.end_unterminated(s, held, mid); }
};

std::string format_tag(TagStyle style, int rank, StreamId stream) {
  char buf[64];
  switch (style) {
    case TagStyle::kNone:
      return std::string();
    case TagStyle::kHorovod:
      std::snprintf(buf, sizeof buf, "[%d]<%s>:", rank, stream_name(stream));
      break;
    case TagStyle::kOpenMpi:
      std::snprintf(buf, sizeof buf, "[1,%d]<%s>:", rank, stream_name(stream));
      break;
    case TagStyle::kMpich:
      std::snprintf(buf, sizeof buf, "[%d] ", rank);
      break;
  }
  return buf;
}

std::string format_timestamp(std::time_t t) {
  std::tm tm{};
  char buf[64];
  if (::localtime_r(&t, &tm) == nullptr || ::asctime_r(&tm, buf) == nullptr) return "?";
  std::string s(buf);
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

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

ConsoleOutput::ConsoleOutput(OutputOptions options, int stdout_fd, int stderr_fd)
    : options_(std::move(options)) {
  out_ = std::make_unique<Destination>(stdout_fd, options_.buffer_size);
  if (!options_.merge_stderr && !same_open_file(stdout_fd, stderr_fd)) {
    err_ = std::make_unique<Destination>(stderr_fd, options_.buffer_size);
  }
  streams_.resize(2 * static_cast<std::size_t>(std::max(options_.world_size, 1)));
}

ConsoleOutput::~ConsoleOutput() {
  // The owner's hook may capture objects already destroyed (declared after this one);
  // late warnings take the default path.
  warn_ = nullptr;
  for (std::size_t i = 0; i < streams_.size(); ++i) {
    if (streams_[i] &&
        (streams_[i]->assembler.mid_line() || streams_[i]->assembler.held_size() > 0 ||
         streams_[i]->file_state == StreamState::File::kOpen)) {
      close_stream(streams_[i]->rank, streams_[i]->stream);
    }
  }
  flush();
}

void ConsoleOutput::set_warn(std::function<void(const std::string&)> warn) {
  warn_ = std::move(warn);
}

void ConsoleOutput::set_clock(std::function<std::time_t()> clock) { clock_ = std::move(clock); }

ConsoleOutput::StreamState& ConsoleOutput::state(int rank, StreamId stream) {
  const std::size_t i = 2 * static_cast<std::size_t>(rank) + (stream == StreamId::kStderr);
  if (i >= streams_.size()) streams_.resize(i + 1);
  if (!streams_[i]) {
    auto s = std::make_unique<StreamState>(options_.line_cap);
    s->rank = rank;
    s->stream = stream;
    s->tag = format_tag(options_.tag, rank, stream);
    if (options_.timestamps && options_.tag == TagStyle::kNone) {
      s->tag = std::string("<") + stream_name(stream) + ">:";  // as Open MPI
    }
    s->dest = (stream == StreamId::kStderr && err_) ? err_.get() : out_.get();
    streams_[i] = std::move(s);
  }
  return *streams_[i];
}

void ConsoleOutput::refresh_timestamp() {
  if (!options_.timestamps) return;
  const std::time_t now = clock_ ? clock_() : std::time(nullptr);
  if (now != stamp_time_) {
    stamp_time_ = now;
    stamp_ = format_timestamp(now);
  }
}

void ConsoleOutput::write(int rank, StreamId stream, std::string_view bytes) {
  if (rank < 0 || bytes.empty()) return;
  StreamState& s = state(rank, stream);
  if (!options_.output_dir.empty()) write_file(s, bytes);
  refresh_timestamp();
  Handler h{*this, s};
  s.assembler.feed(bytes, h);
  if (s.waiting && s.assembler.held_size() <= s.assembler.cap()) drop_waiter(s);
  if (s.dest->holder != nullptr) enforce_queue_cap(*s.dest);
  report_errors();
}

void ConsoleOutput::close_stream(int rank, StreamId stream) {
  if (rank < 0) return;
  StreamState& s = state(rank, stream);
  // A stream that ended without a byte still gets its (empty) file.
  if (!options_.output_dir.empty() &&
      (s.file_state == StreamState::File::kOpen ||
       (s.file_state == StreamState::File::kNone && open_file(s)))) {
    s.file->flush();
    if (s.file->error() != 0) {
      file_error(s, "write", s.file->error());
    } else {
      s.file.reset();
      s.file_state = StreamState::File::kClosed;
    }
  }
  refresh_timestamp();
  Handler h{*this, s};
  s.assembler.finish(h);
  if (s.waiting) drop_waiter(s);
  if (s.dest->holder != nullptr) enforce_queue_cap(*s.dest);
  report_errors();
}

void ConsoleOutput::flush() {
  out_->out.flush();
  if (err_) err_->out.flush();
  for (auto& s : streams_) {
    if (s && s->file) {
      s->file->flush();
      if (s->file->error() != 0) file_error(*s, "write", s->file->error());
    }
  }
  report_errors();
  // Warnings printed by the default hook just now.
  out_->out.flush();
  if (err_) err_->out.flush();
}

void ConsoleOutput::print_line(StreamId stream, std::string_view line) {
  Destination& d = (stream == StreamId::kStderr && err_) ? *err_ : *out_;
  const bool nl = !line.empty() && line.back() == '\n';
  if (d.holder != nullptr) {
    d.queue.append(line);
    if (!nl) d.queue.push_back('\n');
  } else {
    d.out.append(line);
    if (!nl) d.out.append("\n", 1);
  }
}

std::size_t ConsoleOutput::buffered_bytes() const {
  std::size_t n = out_->out.size() + out_->queue.size();
  if (err_) n += err_->out.size() + err_->queue.size();
  for (const auto& s : streams_) {
    if (!s) continue;
    n += s->assembler.held_size();
    if (s->file) n += s->file->size();
  }
  return n;
}

namespace {

// Writes `held` and `body` (whole lines) to `out`, stamp and tag before each line.
template <typename Out>
void format_lines(Out& out, std::string_view stamp, std::string_view tag, std::string_view held,
                  std::string_view body) {
  if (stamp.empty() && tag.empty()) {
    out.append(held);
    out.append(body);
    return;
  }
  const char* p = body.data();
  const char* const end = p + body.size();
  bool first = true;
  while (p < end) {
    const auto* nl = static_cast<const char*>(std::memchr(p, '\n', end - p));
    out.keep_together(stamp.size() + tag.size() + (first ? held.size() : 0) + (nl + 1 - p));
    if (!stamp.empty()) out.append(stamp);
    out.append(tag);
    if (first) {
      out.append(held);
      first = false;
    }
    out.append(p, nl + 1 - p);
    p = nl + 1;
  }
}

}  // namespace

void ConsoleOutput::emit_lines(StreamState& s, std::string_view held, std::string_view body) {
  Destination& d = *s.dest;
  if (d.holder != nullptr && d.holder != &s) {
    StringOut q{d.queue};
    format_lines(q, stamp_, s.tag, held, body);
  } else {
    format_lines(d.out, stamp_, s.tag, held, body);
  }
}

bool ConsoleOutput::take(StreamState& s, std::string_view held, std::string_view tail) {
  Destination& d = *s.dest;
  if (d.holder != nullptr && d.holder != &s) {
    if (!s.waiting) {
      s.waiting = true;
      d.waiters.push_back(&s);
    }
    return false;
  }
  d.holder = &s;
  d.out.append(stamp_);
  d.out.append(s.tag);
  d.out.append(held);
  d.out.append(tail);
  return true;
}

void ConsoleOutput::pass(StreamState& s, std::string_view bytes, bool line_ended) {
  Destination& d = *s.dest;
  d.out.append(bytes);
  if (line_ended) release(d);
}

void ConsoleOutput::end_unterminated(StreamState& s, std::string_view held, bool mid_line) {
  Destination& d = *s.dest;
  if (mid_line) {
    d.out.append("\n", 1);
    release(d);
    return;
  }
  if (d.holder != nullptr && d.holder != &s) {
    StringOut q{d.queue};
    q.append(stamp_);
    q.append(s.tag);
    q.append(held);
    q.append("\n", 1);
  } else {
    d.out.append(stamp_);
    d.out.append(s.tag);
    d.out.append(held);
    d.out.append("\n", 1);
  }
}

void ConsoleOutput::release(Destination& d) {
  d.holder = nullptr;
  if (!d.queue.empty()) {
    d.out.append(d.queue);
    if (d.queue.capacity() > kKeepQueueCapacity) {
      std::string().swap(d.queue);
    } else {
      d.queue.clear();
    }
  }
  // The first stream whose own long line waited takes the fd next.
  while (!d.waiters.empty()) {
    StreamState* w = d.waiters.front();
    d.waiters.erase(d.waiters.begin());
    w->waiting = false;
    if (w->assembler.held_size() <= w->assembler.cap()) continue;
    const std::string held = w->assembler.take_held();
    d.holder = w;
    d.out.append(stamp_);
    d.out.append(w->tag);
    d.out.append(held);
    break;
  }
}

void ConsoleOutput::drop_waiter(StreamState& s) {
  auto& w = s.dest->waiters;
  w.erase(std::remove(w.begin(), w.end(), &s), w.end());
  s.waiting = false;
}

void ConsoleOutput::enforce_queue_cap(Destination& d) {
  int broken_rank = -1;
  StreamId broken_stream = StreamId::kStdout;
  while (d.holder != nullptr) {
    std::size_t queued = d.queue.size();
    for (const StreamState* w : d.waiters) queued += w->assembler.held_size();
    if (queued <= options_.queue_cap) break;
    StreamState& h = *d.holder;
    d.out.append("\n", 1);
    h.assembler.break_line();  // its continuation starts a new tagged line
    if (broken_rank < 0) {
      broken_rank = h.rank;
      broken_stream = h.stream;
    }
    release(d);
  }
  if (broken_rank >= 0 && !break_warned_) {
    break_warned_ = true;
    char msg[320];
    std::snprintf(msg, sizeof msg,
                  "rank %d's %s line grew too long while other ranks' output waited behind "
                  "it; a line break was inserted into it (no bytes were lost). Further such "
                  "breaks are not reported.",
                  broken_rank, stream_name(broken_stream));
    warn(msg);
  }
}

void ConsoleOutput::write_file(StreamState& s, std::string_view bytes) {
  if (s.file_state == StreamState::File::kFailed) return;
  if (!s.file && !open_file(s)) return;
  s.file->append(bytes);
  if (s.file->error() != 0) file_error(s, "write", s.file->error());
}

bool ConsoleOutput::open_file(StreamState& s) {
  const std::string path = rank_file_path(options_, s.rank, s.stream);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  if (ec) {
    file_error(s, "create directory for", ec.value());
    return false;
  }
  // Reopened after close_stream (more bytes came): append rather than truncate.
  const int mode = s.file_state == StreamState::File::kClosed ? O_APPEND : O_TRUNC;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | mode, 0644);
  if (fd < 0) {
    file_error(s, "open", errno);
    return false;
  }
  s.file = std::make_unique<FdWriter>(fd, kFileBuffer, true);
  s.file_state = StreamState::File::kOpen;
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

void ConsoleOutput::report_errors() {
  for (Destination* d : {out_.get(), err_.get()}) {
    if (d == nullptr || d->out.error() == 0 || d->reported) continue;
    d->reported = true;
    warn("cannot write output to fd " + std::to_string(d->out.fd()) + ": " +
         std::strerror(d->out.error()) + "; further output to it is discarded");
  }
}

void ConsoleOutput::warn(const std::string& message) {
  if (warn_) {
    warn_(message);
  } else {
    print_line(StreamId::kStderr, options_.program + ": warning: " + message);
  }
}

}  // namespace ferry
