#pragma once
/// \file
/// ferryd's one writer to the front end: frames in order, and rank output moved from the
/// rank's pipe to the front end's stream with splice(2), so its bytes never enter ferryd.

#include <asio.hpp>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <string_view>

#include "ferry/output/sink.hpp"
#include "ferry/wire/frame_batch.hpp"

namespace ferry {

/// Writes frames to a non-blocking stream (ferryd's stdout: a pipe to sshd, or a socket).
/// Frames queued while the stream is full gather into one block and leave in one write.
class OutputPump {
 public:
  struct Events {
    std::function<void()> idle;    ///< everything queued has been written
    std::function<void()> broken;  ///< the stream failed (the front end is gone)
  };

  OutputPump(asio::io_context& io, int fd, Events events);
  ~OutputPump() = default;
  OutputPump(const OutputPump&) = delete;
  OutputPump& operator=(const OutputPump&) = delete;

  /// Whether output can be spliced: the stream is a pipe or a socket.
  bool can_splice() const { return can_splice_; }

  /// Queues one encoded frame.
  void send(std::string_view frame);

  /// Queues an Output frame holding the next `n` bytes of `pipe_fd`, which must already
  /// hold them and be read by nobody else until `done` runs; they are spliced straight
  /// into the stream. `done` also runs when the frame is dropped (drop()).
  void forward(int pipe_fd, int32_t rank, StreamId stream, size_t n, std::function<void()> done);

  /// Copying instead of splicing (can_splice() false): room for an Output frame's data,
  /// then commit() the bytes read into it.
  std::span<char> room(size_t max);
  void commit(int32_t rank, StreamId stream, size_t n);

  /// Bytes queued and not yet written (forwarded pipe bytes count too).
  size_t queued() const { return queued_; }
  bool idle() const { return pieces_.empty(); }

  /// Forgets everything queued (the front end is gone); forwarded frames' `done` run.
  void drop();

 private:
  // Bytes to write, then optionally bytes to splice from a pipe.
  struct Piece {
    wire::FrameBatch bytes;
    size_t written = 0;
    int splice_fd = -1;
    size_t splice_left = 0;
    std::function<void()> done;
  };

  Piece& open_piece();
  void pump();
  void wait_writable();
  void fail();

  asio::posix::stream_descriptor out_;
  asio::steady_timer retry_;  // a full pipe: when to try again
  Events events_;
  bool can_splice_ = false;
  bool big_pipe_ = false;  // the stream is a pipe grown to kOutPipe
  std::deque<Piece> pieces_;
  size_t queued_ = 0;
  bool pumping_ = false;
  bool waiting_ = false;
  bool broken_ = false;
};

}  // namespace ferry
