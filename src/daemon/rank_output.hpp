#pragma once
// ferryd's rank output: each rank's stdout and stderr pipe, moved to the front end by
// the one OutputPump. A pipe has no buffer of its own in ferryd: its bytes are spliced from
// the pipe to the front end's stream (or, without splice, read straight into the frame
// batch bound there), so a slow front end holds the ranks back instead of growing ferryd.

#include <asio.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "ferry/daemon/output_pump.hpp"
#include "ferry/output/sink.hpp"
#include "ferry/process/unique_fd.hpp"

namespace ferry {

class RankStream;

/// Where every rank stream's bytes go, and how: spliced, copied, or (the front end gone)
/// read and discarded so no rank blocks writing before it is stopped.
class OutputChannel {
 public:
  OutputChannel(asio::io_context& io, OutputPump& pump, bool splice);
  ~OutputChannel() = default;
  OutputChannel(const OutputChannel&) = delete;
  OutputChannel& operator=(const OutputChannel&) = delete;

  /// The front end is gone: forgets what the pump holds and discards every stream's bytes
  /// from now on, parked streams included.
  void discard();
  /// The pump wrote everything queued: streams parked at the high-water mark read again.
  void pump_idle();
  /// Bytes wait in the pump for the front end (which is behind).
  bool holding() const { return mode_ != Mode::kDiscard && !pump_->idle(); }
  /// From now on output goes to `pump`, copied (it seals what it sends). Frames already
  /// queued in the old pump still leave through it.
  void reroute(OutputPump& pump);

 private:
  friend class RankStream;
  enum class Mode { kSplice, kCopy, kDiscard };

  void park(RankStream& s);
  void unpark(RankStream& s);
  void resume();

  asio::io_context& io_;
  OutputPump* pump_;
  Mode mode_;
  bool paused_ = false;  // copying: the pump holds more than the high-water mark
  std::vector<RankStream*> parked_;
};

/// One rank's stdout or stderr pipe, from open() to its end (EOF, or close()).
class RankStream {
 public:
  /// `ended` runs once the pipe is closed for good (EOF, an error, or close()).
  RankStream(OutputChannel& channel, int32_t rank, StreamId id, std::function<void()> ended);
  ~RankStream();
  RankStream(const RankStream&) = delete;
  RankStream& operator=(const RankStream&) = delete;

  /// Starts moving the read end of the rank's pipe.
  void open(UniqueFd fd);
  /// Closes the pipe now (its writer is a background child that outlived the rank), or,
  /// while the pump still splices from it, as soon as that frame left.
  void close();
  /// Until `ended` ran.
  bool is_open() const { return state_ != State::kClosed; }

 private:
  friend class OutputChannel;
  enum class State {
    kClosed,      // no pipe (not opened yet, or ended)
    kWaiting,     // waiting for the pipe to be readable, or for the next turn
    kForwarding,  // a frame of its bytes is queued in the pump, which reads the pipe
    kCloseAfter,  // as kForwarding, then close: close() came while forwarding
    kParked,      // copying: held back until the pump drains
  };

  void wait();
  void pull();
  void splice();
  bool hold(size_t avail);
  void forwarded();
  void copy();
  void drain();
  void next_turn(ssize_t n, size_t asked);
  void end();

  OutputChannel& channel_;
  const int32_t rank_;
  const StreamId id_;
  std::function<void()> ended_;
  UniqueFd fd_;                        // the pipe's read end
  asio::posix::stream_descriptor sd_;  // fd_, while waiting for it to be readable
  asio::steady_timer hold_timer_;      // splicing: a streaming rank's pipe fills a little longer
  std::chrono::steady_clock::time_point last_frame_{};  // when its last frame was queued
  bool held_ = false;  // the bytes now in the pipe were held once already
  State state_ = State::kClosed;
};

}  // namespace ferry
