#include "ferry/output/console_output.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <asio/post.hpp>
#include <cerrno>
#include <cstring>
#include <utility>

#include "console_parts.hpp"

namespace ferry {
namespace {

bool same_open_file(int a, int b) {
  if (a == b) return true;
  struct stat sa {};
  struct stat sb {};
  if (::fstat(a, &sa) != 0 || ::fstat(b, &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

}  // namespace

ConsoleOutput::ConsoleOutput(OutputOptions options, int stdout_fd, int stderr_fd)
    : options_(std::move(options)) {
  out_ = std::make_unique<Destination>(stdout_fd, options_.buffer_size);
  if (!options_.merge_stderr && !same_open_file(stdout_fd, stderr_fd)) {
    err_ = std::make_unique<Destination>(stderr_fd, options_.buffer_size);
  }
  streams_.resize(2 * static_cast<std::size_t>(std::max(options_.world_size, 1)));
  for (Destination* d : {out_.get(), err_.get()}) {
    if (d == nullptr) continue;
    const bool tty = console_terminal(d->out.fd(), d->width);
    d->live = options_.live_bars == LiveBars::kOn || (options_.live_bars == LiveBars::kAuto && tty);
  }
  for (int r : options_.console_ranks) {
    if (r < 0) continue;
    if (static_cast<std::size_t>(r) >= shown_ranks_.size()) shown_ranks_.resize(r + 1);
    shown_ranks_[r] = true;
  }
  if (!options_.console_ranks.empty() && shown_ranks_.empty()) shown_ranks_.push_back(false);
  if (options_.fold) {
    fold_ = std::make_unique<Folder>();
    fold_->shown = static_cast<std::size_t>(std::max(options_.world_size, 1));
    if (!shown_ranks_.empty())
      fold_->shown =
          static_cast<std::size_t>(std::count(shown_ranks_.begin(), shown_ranks_.end(), true));
  }
}

// NOLINTNEXTLINE(bugprone-exception-escape): the timer, the one thing that throws, goes first
ConsoleOutput::~ConsoleOutput() {
  // The owner's hooks may capture objects already destroyed (declared after this one);
  // late warnings take the default path. With no timer, arm_timer returns at once.
  warn_ = nullptr;
  flow_ = nullptr;
  timer_.reset();
  reader_gone_ = nullptr;
  for (auto& stream : streams_) {
    if (stream && (stream->assembler.mid_line() || stream->assembler.held_size() > 0 ||
                   stream->file_state == StreamState::File::kOpen)) {
      close_stream(stream->rank, stream->stream);
    }
  }
  if (fold_) fold_out(true);
  // Everything goes out before the program ends: wait for the writing threads, then write
  // directly (the warnings of errors they met included).
  for (Destination* d : {out_.get(), err_.get()})
    if (d != nullptr) d->out.stop_behind();
  self_.reset();
  flush();
}

void ConsoleOutput::write_behind(asio::io_context& io) {
  if (self_) return;
  self_ = std::make_shared<ConsoleOutput*>(this);
  timer_ = std::make_unique<asio::steady_timer>(io);
  // Runs on a writing thread: only posts, and the loop finds out whether this still exists.
  auto wake = [&io, weak = std::weak_ptr<ConsoleOutput*>(self_)] {
    asio::post(io, [weak] {
      if (auto self = weak.lock()) (*self)->caught_up();
    });
  };
  for (Destination* d : {out_.get(), err_.get()})
    if (d != nullptr) d->out.start_behind(wake);
}

void ConsoleOutput::set_flow_handler(std::function<void(bool behind)> handler) {
  flow_ = std::move(handler);
}

// Tells the flow handler to stop once too much waits for the writing threads.
void ConsoleOutput::check_flow() {
  if (behind_ || !self_) return;
  std::size_t waiting = 0;
  for (Destination* d : {out_.get(), err_.get()})
    if (d != nullptr) waiting += d->out.queued();
  if (waiting <= options_.behind_limit) return;
  behind_ = true;
  for (Destination* d : {out_.get(), err_.get()})
    if (d != nullptr) d->out.behind()->wake_at(options_.behind_limit / 2);
  if (flow_) flow_(true);
}

// A writing thread got down to half the limit (or failed, dropping its queue).
void ConsoleOutput::caught_up() {
  report_errors();
  if (!behind_) return;
  bool waiting = false;
  for (Destination* d : {out_.get(), err_.get()}) {
    if (d == nullptr || d->out.queued() <= options_.behind_limit / 2) continue;
    d->out.behind()->wake_at(options_.behind_limit / 2);
    waiting = true;
  }
  if (waiting) return;
  behind_ = false;
  // The unfinished lines' rest could not come while reading stopped: their wait for it
  // starts again now, as long as amid heavy output (see prompt_delay()).
  resumed_ = now();
  for (StreamState* s : partials_) s->fed = resumed_;
  if (flow_) flow_(false);
}

void ConsoleOutput::set_reader_gone_handler(std::function<void()> handler) {
  reader_gone_ = std::move(handler);
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
    s->tag = tag_of(rank, stream);
    s->on_console = on_console(rank);
    s->dest = (stream == StreamId::kStderr && err_) ? err_.get() : out_.get();
    streams_[i] = std::move(s);
  }
  return *streams_[i];
}

std::string ConsoleOutput::tag_of(int rank, StreamId stream) const {
  if (options_.timestamps && options_.tag == TagStyle::kNone)
    return std::string("<") + stream_name(stream) + ">:";  // as Open MPI
  const auto r = static_cast<std::size_t>(rank);
  const std::string_view host = r < options_.rank_hosts.size()
                                    ? std::string_view(options_.rank_hosts[r])
                                    : std::string_view();
  if (auto it = spawned_.find(rank); it != spawned_.end())
    return format_spawned_tag(options_.tag, it->second.spawn, it->second.rank, stream,
                              it->second.host);
  return format_tag(options_.tag, shown(rank), stream, host);
}

void ConsoleOutput::name_spawned(int id, int spawn, int rank, const std::string& host) {
  if (id < 0) return;
  spawned_[id] = {spawn, rank, host};
  for (StreamId stream : {StreamId::kStdout, StreamId::kStderr}) {
    const std::size_t i = 2 * static_cast<std::size_t>(id) + (stream == StreamId::kStderr);
    if (i < streams_.size() && streams_[i]) streams_[i]->tag = tag_of(id, stream);
  }
}

void ConsoleOutput::relabel(int rank, int shown) {
  if (rank < 0 || shown < 0) return;
  const auto r = static_cast<std::size_t>(rank);
  if (r >= shown_as_.size()) {
    const std::size_t from = shown_as_.size();
    shown_as_.resize(r + 1);
    for (std::size_t i = from; i < shown_as_.size(); ++i) shown_as_[i] = static_cast<int>(i);
  }
  shown_as_[r] = shown;
  for (StreamId stream : {StreamId::kStdout, StreamId::kStderr}) {
    const std::size_t i = 2 * r + (stream == StreamId::kStderr);
    if (i < streams_.size() && streams_[i]) streams_[i]->tag = tag_of(rank, stream);
  }
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
  if (!s.on_console) return;
  refresh_timestamp();
  count_bytes(s, bytes.size());
  Handler h{*this, s};
  s.assembler.feed(bytes, h);
  if (s.assembler.held_size() != 0) watch_partial(s, bytes.size());
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
  if (fold_) fold_out(false);
  if (live_due_) draw_due();
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
  if (fold_) fold_out(true);  // ferry's diagnostics come after the lines before them
  Destination& d = (stream == StreamId::kStderr && err_) ? *err_ : *out_;
  const bool nl = !line.empty() && line.back() == '\n';
  if (d.holder != nullptr) {
    d.queue.append(line);
    if (!nl) d.queue.push_back('\n');
  } else {
    unshow(d);
    d.out.append(line);
    if (!nl) d.out.append("\n", 1);
  }
  check_flow();
}

std::size_t ConsoleOutput::buffered_bytes() const {
  std::size_t n = out_->out.size() + out_->out.queued() + out_->queue.size();
  if (err_) n += err_->out.size() + err_->out.queued() + err_->queue.size();
  for (const auto& s : streams_) {
    if (!s) continue;
    n += s->assembler.held_size();
    if (s->file) n += s->file->size();
  }
  return n;
}

int ConsoleOutput::write_error() const {
  for (const Destination* d : {out_.get(), err_.get()})
    if (d != nullptr && d->out.error() != 0) return d->out.error();
  return 0;
}

// Also checks the flow: every call that can hand bytes to a writing thread ends here.
void ConsoleOutput::report_errors() {
  for (Destination* d : {out_.get(), err_.get()}) {
    if (d == nullptr || d->out.error() == 0 || d->reported) continue;
    d->reported = true;
    // Nobody reads stdout any more (`| head` exited): the job ends, as a pipeline's writer does.
    if (d == out_.get() && d->out.error() == EPIPE && reader_gone_) {
      warn("stdout is a broken pipe (its reader is gone); stopping the job");
      auto gone = std::exchange(reader_gone_, nullptr);
      gone();
      continue;
    }
    warn("cannot write output to fd " + std::to_string(d->out.fd()) + ": " +
         std::strerror(d->out.error()) + "; further output to it is discarded");
  }
  check_flow();
}

void ConsoleOutput::warn(const std::string& message) {
  if (warn_) {
    warn_(message);
  } else {
    print_line(StreamId::kStderr, options_.program + ": warning: " + message);
  }
}

}  // namespace ferry
