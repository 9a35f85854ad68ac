#pragma once
// The test plays ferryrun: a Daemon on pipes, frames in and out through the wire API, the
// io_context run in slices between the test's checks.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ferry/daemon/daemon.hpp"
#include "ferry/output/sink.hpp"
#include "ferry/process/unique_fd.hpp"
#include "ferry/wire/frame.hpp"
#include "ferry/wire/messages.hpp"

namespace ferry::test_support {

/// How the test's end of a FrontEnd session is made.
struct FrontEndShape {
  bool socket = false;       ///< ferryd writes to a socket (as to a local ferryrun), not a pipe
  bool output_copy = false;  ///< FERRY_OUTPUT_COPY: ferryd copies rank output, no splice
};

class FrontEnd {
 public:
  using Clock = std::chrono::steady_clock;
  struct Received {
    wire::Frame frame;
    Clock::time_point at;
  };

  /// Starts a Daemon whose ranks `spawner` starts (null: real processes).
  explicit FrontEnd(ProcessSpawner* spawner, FrontEndShape shape = {}) {
    auto to = make_pipe();
    EXPECT_TRUE(to);
    to_daemon_ = std::move(to->write);
    DaemonOptions options;
    options.in_fd = to->read.release();
    if (shape.socket) {
      int sv[2];
      EXPECT_EQ(0, ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
      from_daemon_ = UniqueFd(sv[0]);
      options.out_fd = sv[1];
    } else {
      auto from = make_pipe();
      EXPECT_TRUE(from);
      from_daemon_ = std::move(from->read);
      options.out_fd = from->write.release();
    }
    ::fcntl(from_daemon_.get(), F_SETFL, O_NONBLOCK);
    options.spawner = spawner;
    options.settings.output_copy = shape.output_copy;
    daemon_ = std::make_unique<Daemon>(io, options);
    daemon_->start();
  }

  asio::io_context io;

  template <class M>
  void send(const M& m) {
    const std::string bytes = wire::encode(m);
    ASSERT_EQ(static_cast<ssize_t>(bytes.size()),
              ::write(to_daemon_.get(), bytes.data(), bytes.size()));
  }
  /// EOF on ferryd's input: the front end is gone.
  void hang_up() { to_daemon_.reset(); }

  /// Runs the daemon until `done()` holds (true) or `limit` passed or it stopped (false).
  bool run_until(const std::function<bool()>& done,
                 std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
    const auto deadline = Clock::now() + limit;
    for (;;) {
      collect();
      if (done()) return true;
      if (io.stopped() || Clock::now() >= deadline) return false;
      io.run_for(std::chrono::milliseconds(2));
    }
  }
  /// Runs the daemon for `d`, whatever happens.
  void run_for(std::chrono::milliseconds d) {
    run_until([] { return false; }, d);
  }
  bool stopped() const { return io.stopped(); }
  int exit_code() const { return daemon_->exit_code(); }

  const std::vector<Received>& frames() const { return frames_; }
  /// Every received message of type `M`, in order.
  template <class M>
  std::vector<M> all() const {
    std::vector<M> v;
    for (const auto& r : frames_)
      if (r.frame.type == static_cast<uint8_t>(M::kType)) {
        auto m = wire::decode<M>(r.frame);
        EXPECT_TRUE(m) << m.error().message;
        if (m) v.push_back(std::move(*m));
      }
    return v;
  }
  /// When the first message of type `M` arrived, or nullopt.
  template <class M>
  std::optional<Clock::time_point> first() const {
    for (const auto& r : frames_)
      if (r.frame.type == static_cast<uint8_t>(M::kType)) return r.at;
    return std::nullopt;
  }
  /// Position of the first `M` among the frames; frames().size() if none.
  template <class M>
  size_t index_of() const {
    for (size_t i = 0; i < frames_.size(); ++i)
      if (frames_[i].frame.type == static_cast<uint8_t>(M::kType)) return i;
    return frames_.size();
  }
  /// Everything `rank` wrote to `stream`, in the frames before position `end`.
  std::string output(int rank, StreamId stream, size_t end = SIZE_MAX) const {
    std::string s;
    for (size_t i = 0; i < frames_.size() && i < end; ++i) {
      const wire::Frame& f = frames_[i].frame;
      if (f.type != static_cast<uint8_t>(wire::MsgType::kOutput)) continue;
      auto o = wire::decode<wire::OutputView>(f);
      if (o && o->rank == rank && o->stream == static_cast<uint8_t>(stream)) s += o->data;
    }
    return s;
  }

 private:
  void collect() {
    char buf[65536];
    ssize_t n;
    while ((n = ::read(from_daemon_.get(), buf, sizeof buf)) > 0) {
      reader_.feed(std::string_view(buf, static_cast<size_t>(n)));
      for (;;) {
        auto f = reader_.next();
        EXPECT_TRUE(f) << (f ? "" : f.error().message);
        if (!f || !*f) break;
        frames_.push_back({std::move(**f), Clock::now()});
      }
    }
  }

  UniqueFd to_daemon_, from_daemon_;
  std::unique_ptr<Daemon> daemon_;
  wire::FrameReader reader_;
  std::vector<Received> frames_;
};

}  // namespace ferry::test_support
