#pragma once
/// \file
/// ferryd's one writer to the front end: frames in order, and rank output moved from the
/// rank's pipe to the front end's stream with splice(2), so its bytes never enter ferryd.

#include <asio.hpp>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "ferry/output/sink.hpp"
#include "ferry/transport/sealed_records.hpp"
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

  /// Whether output can be spliced: the stream is a pipe or a socket, not sealed.
  bool can_splice() const { return can_splice_ && !sealer_; }

  /// From now on the stream carries sealed records (sealed_records.hpp), the first one
  /// holding `preamble`; nothing may be queued yet. Forwarding is then refused: seal needs
  /// the bytes (room() and commit() instead).
  void seal_with(RecordSealer sealer, std::string_view preamble);

  /// Bytes queued since the start, written or not (a sealed stream: plaintext).
  uint64_t accepted() const { return accepted_; }
  /// Runs `fn` once, as soon as accepted() passes `bytes` (at once if it already has).
  void when_accepted(uint64_t bytes, std::function<void()> fn);

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
  /// The most data an Output frame should carry: on a sealed stream, what fits one record
  /// with its header (records end at frame ends, so the front end never has to join a
  /// frame from two records); else `max`.
  size_t frame_data_limit(size_t max) const;

  /// Bytes queued and not yet written (forwarded pipe bytes count too).
  size_t queued() const { return queued_ + (sealed_.size() - sealed_at_); }
  bool idle() const { return pieces_.empty() && sealed_at_ == sealed_.size(); }

  /// Forgets everything queued (the front end is gone); forwarded frames' `done` run.
  void drop();

 private:
  // Bytes to write, then optionally bytes to splice from a pipe.
  struct Piece {
    wire::FrameBatch bytes;
    size_t written = 0;
    int splice_fd = -1;
    size_t splice_left = 0;
    size_t frame_rest = 0;  // sealed: bytes left of a frame larger than a record
    std::function<void()> done;
  };

  Piece& open_piece();
  void pump();
  // One write(2) of `bytes`: how many went (0: interrupted), or nothing when the stream is
  // full or broke (fail() was called).
  std::optional<size_t> write_some(std::string_view bytes);
  // Sealed: how much of `p` the next record takes (whole frames up to kMaxRecord).
  static size_t next_record(Piece& p);
  // One step of a sealed stream: writes sealed bytes, or seals the next record. False when
  // the stream is full or broke.
  bool pump_sealed();
  void wait_writable();
  void fail();

  asio::posix::stream_descriptor out_;
  asio::steady_timer retry_;  // a full pipe: when to try again
  Events events_;
  bool can_splice_ = false;
  bool big_pipe_ = false;  // the stream is a pipe grown to kOutPipe
  std::deque<Piece> pieces_;
  size_t queued_ = 0;
  uint64_t accepted_ = 0;
  uint64_t watch_at_ = 0;
  std::function<void()> watch_;  // when_accepted's
  void count(size_t n);
  std::optional<RecordSealer> sealer_;
  std::string sealed_;  // records sealed and not yet written, from sealed_at_
  size_t sealed_at_ = 0;
  bool pumping_ = false;
  bool waiting_ = false;
  bool broken_ = false;
};

}  // namespace ferry
