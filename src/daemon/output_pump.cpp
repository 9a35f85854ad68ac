#include "ferry/daemon/output_pump.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <utility>

#include "ferry/wire/codec.hpp"
#include "ferry/wire/messages.hpp"

namespace ferry {
namespace {

// The pipe to sshd, grown to this: sshd takes 16 KiB from it per turn of its loop.
constexpr int kOutPipe = 1 << 20;
// How long a full pipe to sshd is left alone. Waiting for it to become writable would
// wake ferryd at every 16 KiB sshd takes (and sshd's read would wake it): a wake-up and
// a splice per 16 KiB. After this pause sshd has taken up to a pipe's worth; the pause
// caps the stream at kOutPipe per kRetry (1 GB/s), far above what sshd encrypts.
constexpr auto kRetry = std::chrono::microseconds(1000);
// A sealed stream seals this much at a time (in records of kMaxRecord), then writes it in one go.
constexpr size_t kSealBatch = size_t{256} << 10;

}  // namespace

OutputPump::OutputPump(asio::io_context& io, int fd, Events events)
    : out_(io, fd), retry_(io), events_(std::move(events)) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  struct stat st {};
  can_splice_ = ::fstat(fd, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
  // A socket (a local front end) wakes its writer only once it has room to spare; a pipe
  // wakes it as soon as a reader takes anything.
  big_pipe_ = S_ISFIFO(st.st_mode) && (::fcntl(fd, F_GETPIPE_SZ) >= kOutPipe ||
                                       ::fcntl(fd, F_SETPIPE_SZ, kOutPipe) >= kOutPipe);
}

OutputPump::Piece& OutputPump::open_piece() {
  // A piece that already ends in a splice takes no more bytes: they would come after it.
  if (pieces_.empty() || pieces_.back().splice_fd >= 0) pieces_.emplace_back();
  return pieces_.back();
}

void OutputPump::count(size_t n) {
  accepted_ += n;
  if (watch_ && accepted_ > watch_at_) {
    // Posted: the caller is in the middle of queuing.
    asio::post(out_.get_executor(), std::move(watch_));
    watch_ = nullptr;
  }
}

void OutputPump::when_accepted(uint64_t bytes, std::function<void()> fn) {
  watch_at_ = bytes;
  watch_ = std::move(fn);
  count(0);
}

void OutputPump::seal_with(RecordSealer sealer, std::string_view preamble) {
  sealer_ = std::move(sealer);
  sealer_->seal(preamble, sealed_);
  pump();
}

void OutputPump::send(std::string_view frame) {
  if (broken_) return;
  open_piece().bytes.append(frame);
  queued_ += frame.size();
  count(frame.size());
  pump();
}

void OutputPump::forward(int pipe_fd, int32_t rank, StreamId stream, size_t n,
                         std::function<void()> done) {
  if (broken_) {
    if (done) asio::post(out_.get_executor(), std::move(done));
    return;
  }
  Piece& p = open_piece();
  p.bytes.append_output_header(rank, static_cast<uint8_t>(stream), n);
  p.splice_fd = pipe_fd;
  p.splice_left = n;
  p.done = std::move(done);
  queued_ += wire::kOutputHeader + n;
  count(wire::kOutputHeader + n);
  pump();
}

std::span<char> OutputPump::room(size_t max) { return open_piece().bytes.output_room(max); }

size_t OutputPump::frame_data_limit(size_t max) const {
  return sealer_ ? std::min(max, kMaxRecord - wire::kOutputHeader) : max;
}

size_t OutputPump::next_record(Piece& p) {
  const std::string_view b = p.bytes.bytes();
  if (p.frame_rest > 0) {  // the rest of a frame the last record cut
    const size_t take = std::min(p.frame_rest, kMaxRecord);
    p.frame_rest -= take;
    return take;
  }
  size_t at = p.written;
  while (b.size() - at >= 4) {
    const size_t frame = 4 + size_t{wire::Decoder(b.substr(at, 4)).u32()};
    if (frame > b.size() - at) break;  // not a whole frame (not expected): cut by size
    if (at + frame - p.written > kMaxRecord) {
      if (at > p.written) break;
      p.frame_rest = frame - kMaxRecord;  // a frame larger than a record: cut it
      return kMaxRecord;
    }
    at += frame;
  }
  // Record boundaries never change what arrives, only whether the front end has to join
  // a frame; bytes that do not parse as frames go in records of kMaxRecord.
  return at > p.written ? at - p.written : std::min(b.size() - p.written, kMaxRecord);
}

void OutputPump::commit(int32_t rank, StreamId stream, size_t n) {
  if (broken_) return;
  pieces_.back().bytes.commit_output(rank, static_cast<uint8_t>(stream), n);
  queued_ += wire::kOutputHeader + n;
  count(wire::kOutputHeader + n);
  pump();
}

void OutputPump::pump() {
  if (pumping_ || waiting_ || broken_) return;
  pumping_ = true;
  if (sealer_) {
    while (!broken_ && pump_sealed()) {
    }
  }
  while (!sealer_ && !pieces_.empty() && !broken_) {
    Piece& p = pieces_.front();
    if (p.written < p.bytes.size()) {
      const auto n = write_some(p.bytes.bytes().substr(p.written));
      if (!n) break;
      p.written += *n;
      queued_ -= *n;
      continue;
    }
    if (p.splice_left > 0) {
      ssize_t n = ::splice(p.splice_fd, nullptr, out_.native_handle(), nullptr, p.splice_left,
                           SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) break;  // the stream is full (the pipe holds the bytes)
      if (n <= 0) {
        // The frame's length is promised: a pipe that cannot deliver breaks the stream.
        fail();
        break;
      }
      p.splice_left -= static_cast<size_t>(n);
      queued_ -= static_cast<size_t>(n);
      continue;
    }
    auto done = std::move(p.done);
    pieces_.pop_front();
    if (done) done();  // may queue more; the loop writes it
  }
  pumping_ = false;
  if (broken_) return;
  if (!idle()) {
    wait_writable();
  } else if (events_.idle) {
    events_.idle();
  }
}

std::optional<size_t> OutputPump::write_some(std::string_view bytes) {
  const ssize_t n = ::write(out_.native_handle(), bytes.data(), bytes.size());
  if (n > 0) return static_cast<size_t>(n);
  if (n < 0 && errno == EINTR) return 0;
  if (n < 0 && errno == EAGAIN) return std::nullopt;
  fail();
  return std::nullopt;
}

bool OutputPump::pump_sealed() {
  if (sealed_at_ < sealed_.size()) {
    const auto n = write_some(std::string_view(sealed_).substr(sealed_at_));
    if (!n) return false;
    sealed_at_ += *n;
    if (sealed_at_ == sealed_.size()) {
      sealed_.clear();
      sealed_at_ = 0;
    }
    return true;
  }
  if (pieces_.empty()) return false;
  // What is queued goes into records of whole frames, at most kMaxRecord each, up to
  // kSealBatch sealed in one go: one write then carries them all.
  while (!pieces_.empty() && sealed_.size() < kSealBatch) {
    Piece& p = pieces_.front();
    const std::string_view rest = p.bytes.bytes().substr(p.written, next_record(p));
    if (!rest.empty()) {
      sealer_->seal(rest, sealed_);
      p.written += rest.size();
      queued_ -= rest.size();
    }
    if (p.written < p.bytes.size()) continue;
    auto done = std::move(p.done);
    pieces_.pop_front();
    if (done) done();  // may queue more (a copy reads again only on its next turn)
  }
  return true;
}

void OutputPump::wait_writable() {
  if (waiting_) return;
  waiting_ = true;
  if (big_pipe_) {
    retry_.expires_after(kRetry);
    retry_.async_wait([this](std::error_code ec) {
      if (ec == asio::error::operation_aborted) return;
      waiting_ = false;
      pump();
    });
    return;
  }
  out_.async_wait(asio::posix::stream_descriptor::wait_write, [this](std::error_code ec) {
    waiting_ = false;
    if (ec == asio::error::operation_aborted) return;
    if (ec) return fail();
    pump();
  });
}

void OutputPump::fail() {
  if (broken_) return;
  broken_ = true;
  if (events_.broken) events_.broken();  // first, so dropped frames' owners know why
  drop();
}

void OutputPump::drop() {
  sealed_.clear();
  sealed_at_ = 0;
  std::vector<std::function<void()>> dones;
  for (auto& p : pieces_)
    if (p.done) dones.push_back(std::move(p.done));
  pieces_.clear();
  queued_ = 0;
  for (auto& d : dones) d();
}

}  // namespace ferry
