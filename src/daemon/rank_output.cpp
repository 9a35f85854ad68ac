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
// One read from a rank pipe: a whole default pipe buffer.
constexpr size_t kReadChunk = 64u << 10;
// Largest Output frame spliced at once (a pipe rarely holds more).
constexpr size_t kMaxForward = 1u << 20;

}  // namespace

// ---- OutputChannel ------------------------------------------------------------------------

OutputChannel::OutputChannel(asio::io_context& io, OutputPump& pump, bool splice)
    : io_(io), pump_(pump), mode_(splice ? Mode::kSplice : Mode::kCopy) {}

void OutputChannel::discard() {
  mode_ = Mode::kDiscard;
  // Frames still queued lose their pipes' bytes: their streams drain from now on.
  pump_.drop();
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
    : channel_(channel), rank_(rank), id_(id), ended_(std::move(ended)), sd_(channel.io_) {}

RankStream::~RankStream() {
  if (state_ == State::kParked) channel_.unpark(*this);
}

void RankStream::open(UniqueFd fd) {
  ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) | O_NONBLOCK);
  sd_.assign(fd.release());
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

// Waits until the pipe is readable, then pulls from it.
void RankStream::wait() {
  sd_.async_wait(stream_descriptor::wait_read, [this](std::error_code ec) {
    if (ec == asio::error::operation_aborted || state_ != State::kWaiting) return;
    if (ec) return end();
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
  const int fd = sd_.native_handle();
  int avail = 0;
  if (::ioctl(fd, FIONREAD, &avail) == 0 && avail > 0) {
    state_ = State::kForwarding;
    channel_.pump_.forward(fd, rank_, id_,
                           std::min<size_t>(static_cast<size_t>(avail), kMaxForward),
                           [this] { forwarded(); });
    return;
  }
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR | POLLNVAL)))
    return end();  // nothing left and no writer: EOF
  wait();
}

// The pump wrote (or dropped) the frame of this pipe's bytes.
void RankStream::forwarded() {
  if (state_ == State::kCloseAfter) return end();
  if (state_ != State::kForwarding) return;
  state_ = State::kWaiting;
  pull();
}

// Without splice: one read straight into the frame batch. One read per turn keeps a
// chatty rank from starving the others.
void RankStream::copy() {
  if (channel_.paused_) {
    state_ = State::kParked;
    channel_.park(*this);
    return;
  }
  auto room = channel_.pump_.room(kReadChunk);
  ssize_t n = ::read(sd_.native_handle(), room.data(), room.size());
  if (n > 0) {
    channel_.pump_.commit(rank_, id_, static_cast<size_t>(n));
    if (channel_.pump_.queued() > kHighWater) channel_.paused_ = true;
  }
  next_turn(n, room.size());
}

// The front end is gone: read and discard, so no rank blocks writing before it is
// stopped.
void RankStream::drain() {
  char sink[4096];
  ssize_t n = ::read(sd_.native_handle(), sink, sizeof sink);
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
  std::error_code ignored;
  sd_.close(ignored);
  if (ended_) ended_();
}

}  // namespace ferry
