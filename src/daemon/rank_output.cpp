#include "rank_output.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace ferry {
namespace {

using asio::posix::stream_descriptor;

// Copying output (no splice): stop reading rank pipes while this much is queued for the
// front end, so a slow console throttles the ranks instead of growing ferryd.
constexpr size_t kHighWater = 1u << 20;
// One read from a rank pipe: at least a whole default pipe buffer.
constexpr size_t kReadChunk = 64u << 10;
// Largest Output frame spliced or read at once (a pipe rarely holds more).
constexpr size_t kMaxForward = 1u << 20;
// A rank that keeps writing (its last frame left less than kStreaming ago) and has less
// than kHoldBelow in its pipe is left to write for kHold more before its bytes go out:
// larger frames, and far fewer wake-ups for the rank, ferryd and sshd. A rank that
// writes now and then is never held.
constexpr size_t kHoldBelow = 128u << 10;
constexpr auto kHold = std::chrono::microseconds(1000);
constexpr auto kStreaming = std::chrono::milliseconds(5);

}  // namespace

// ---- OutputChannel ------------------------------------------------------------------------

OutputChannel::OutputChannel(asio::io_context& io, OutputPump& pump, bool splice)
    : io_(io), pump_(&pump), mode_(splice ? Mode::kSplice : Mode::kCopy) {}

void OutputChannel::reroute(OutputPump& pump) {
  pump_ = &pump;
  if (mode_ != Mode::kDiscard) mode_ = pump.can_splice() ? Mode::kSplice : Mode::kCopy;
}

void OutputChannel::discard() {
  mode_ = Mode::kDiscard;
  // Frames still queued lose their pipes' bytes: their streams drain from now on.
  pump_->drop();
  resume();  // so do parked ones, so no rank blocks writing
}

void OutputChannel::pump_idle() {
  if (paused_) resume();
}

void OutputChannel::park(RankStream& s) { parked_.push_back(&s); }

void OutputChannel::unpark(RankStream& s) { std::erase(parked_, &s); }

void OutputChannel::resume() {
  paused_ = false;
  auto waiting = std::move(parked_);
  parked_.clear();
  for (RankStream* s : waiting) {
    if (s->state_ != RankStream::State::kParked) continue;
    s->state_ = RankStream::State::kWaiting;
    s->pull();
  }
}

// ---- RankStream ---------------------------------------------------------------------------

RankStream::RankStream(OutputChannel& channel, int32_t rank, StreamId id,
                       std::function<void()> ended)
    : channel_(channel),
      rank_(rank),
      id_(id),
      ended_(std::move(ended)),
      sd_(channel.io_),
      hold_timer_(channel.io_) {}

RankStream::~RankStream() {
  if (state_ == State::kParked) channel_.unpark(*this);
  if (sd_.is_open()) sd_.release();  // fd_ closes the pipe
}

void RankStream::open(UniqueFd fd) {
  ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) | O_NONBLOCK);
  fd_ = std::move(fd);
  state_ = State::kWaiting;
  wait();
}

void RankStream::close() {
  switch (state_) {
    case State::kClosed:
    case State::kCloseAfter:
      return;
    case State::kForwarding:  // the pump still reads this fd: close once its frame left
      state_ = State::kCloseAfter;
      return;
    case State::kParked:
      channel_.unpark(*this);
      end();
      return;
    case State::kWaiting:
      end();
      return;
  }
}

// Waits until the pipe is readable, then pulls from it. The pipe is watched (in epoll)
// only meanwhile: a watched pipe wakes ferryd at every write of its rank, also while its
// bytes wait to be forwarded anyway.
void RankStream::wait() {
  std::error_code ec;
  if (!sd_.is_open()) sd_.assign(fd_.get(), ec);
  if (ec) return end();
  sd_.async_wait(stream_descriptor::wait_read, [this](std::error_code ec) {
    if (ec == asio::error::operation_aborted || state_ != State::kWaiting) return;
    if (ec) return end();
    sd_.release();
    pull();
  });
}

void RankStream::pull() {
  if (state_ != State::kWaiting) return;
  switch (channel_.mode_) {
    case OutputChannel::Mode::kSplice:
      return splice();
    case OutputChannel::Mode::kCopy:
      return copy();
    case OutputChannel::Mode::kDiscard:
      return drain();
  }
}

// Splicing, the pipe is its own buffer: one frame of what it holds is queued, and the
// pipe is looked at again only once that frame left, so a slow front end holds the rank
// back and ferryd buffers nothing. Readiness that came while a frame was queued is not
// seen again (edge triggered), so the pipe is checked before waiting on it.
void RankStream::splice() {
  const int fd = fd_.get();
  int avail = 0;
  if (::ioctl(fd, FIONREAD, &avail) == 0 && avail > 0) {
    if (hold(static_cast<size_t>(avail))) return;
    state_ = State::kForwarding;
    channel_.pump_->forward(fd, rank_, id_,
                            std::min<size_t>(static_cast<size_t>(avail), kMaxForward),
                            [this] { forwarded(); });
    return;
  }
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR | POLLNVAL)))
    return end();  // nothing left and no writer: EOF
  wait();
}

// Holds a streaming rank's few bytes (`avail`, under kHoldBelow) for kHold (once), then
// pulls again; false when the bytes go out now, a frame starting. The pipe is large enough
// (see RankLauncher) that the rank rarely blocks meanwhile; it is not watched, and pull()
// looks at it when the time is up.
bool RankStream::hold(size_t avail) {
  const auto now = std::chrono::steady_clock::now();
  if (avail == 0 || avail >= kHoldBelow || held_ || now - last_frame_ > kStreaming) {
    held_ = false;
    last_frame_ = now;
    return false;
  }
  held_ = true;
  hold_timer_.expires_after(kHold);
  hold_timer_.async_wait([this](std::error_code ec) {
    if (ec == asio::error::operation_aborted || state_ != State::kWaiting) return;
    pull();
  });
  return true;
}

// The pump wrote (or dropped) the frame of this pipe's bytes.
void RankStream::forwarded() {
  if (state_ == State::kCloseAfter) return end();
  if (state_ != State::kForwarding) return;
  state_ = State::kWaiting;
  pull();
}

// Without splice (a sealed output route, or FERRY_OUTPUT_COPY): one read straight into the
// frame batch. One read per turn keeps a chatty rank from starving the others.
void RankStream::copy() {
  if (channel_.paused_) {
    state_ = State::kParked;
    channel_.park(*this);
    return;
  }
  // As splicing: a streaming rank's few bytes wait a moment, and what the pipe holds is
  // read in one go (large records, few wake-ups).
  int avail = 0;
  if (::ioctl(fd_.get(), FIONREAD, &avail) != 0) avail = 0;
  if (hold(static_cast<size_t>(std::max(avail, 0)))) return;
  const size_t want = channel_.pump_->frame_data_limit(
      std::clamp(static_cast<size_t>(std::max(avail, 0)), kReadChunk, kMaxForward));
  auto room = channel_.pump_->room(want);
  ssize_t n = ::read(fd_.get(), room.data(), room.size());
  if (n > 0) {
    channel_.pump_->commit(rank_, id_, static_cast<size_t>(n));
    if (channel_.pump_->queued() > kHighWater) channel_.paused_ = true;
  }
  next_turn(n, room.size());
}

// The front end is gone: read and discard, so no rank blocks writing before it is
// stopped.
void RankStream::drain() {
  char sink[4096];
  ssize_t n = ::read(fd_.get(), sink, sizeof sink);
  next_turn(n, sizeof sink);
}

// After one read of `n` (read()'s result) of `asked` bytes: EOF or an error ends the
// stream; a full read may have left bytes behind, and no new readiness edge comes for
// those, so the next turn reads again without waiting; else it waits.
void RankStream::next_turn(ssize_t n, size_t asked) {
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return end();
  if (n > 0 && static_cast<size_t>(n) == asked)
    asio::post(channel_.io_, [this] { pull(); });
  else
    wait();
}

void RankStream::end() {
  state_ = State::kClosed;
  hold_timer_.cancel();
  if (sd_.is_open()) sd_.release();  // cancels the wait; the fd is fd_'s
  fd_.reset();
  if (ended_) ended_();
}

}  // namespace ferry
