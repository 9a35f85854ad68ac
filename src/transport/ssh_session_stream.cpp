// The stream half of SshSession: ferryd's stdout to the data handler, its stderr to the
// diagnostics callback, queued sends into the channel window, keepalive, and the end of
// the stream with a reason built from the exit status and the last stderr line.

// ssh_send_keepalive() and ssh_message_reply_default() are declared in server.h but work
// on client sessions too (a plain global request; a refusal of a server's request).
#include <libssh/server.h>

#include <algorithm>
#include <asio/post.hpp>

#include "ferry/transport/socket_reads.hpp"
#include "ssh_session.hpp"

namespace ferry {
namespace {

// Bytes one pump may deliver before yielding, so one chatty host cannot starve the others.
constexpr size_t kPumpBudget = size_t{4} * 1024 * 1024;
constexpr uint32_t kWriteChunk = 256 * 1024;
// Channel data handed to the link at once: large enough that the console writes big
// blocks, small enough to stay in the cache.
constexpr size_t kDeliverBatch = size_t{256} * 1024;
// The largest channel data packet libssh accepts (its CHANNEL_MAX_PACKET).
constexpr size_t kMaxPacket = size_t{32} * 1024;
constexpr size_t kMaxStderrLine = 4096;
// A pump that took at least kHoldAbove bytes means ferryd is streaming: the socket is
// read again kHold later rather than at its next readiness, so each wake-up of the
// session's thread (and of the loop it hands the batch to) carries a millisecond of
// output instead of the few kilobytes one readiness brings, as ferryd holds its ranks'
// pipes. Output that trickles is read at once.
constexpr uint64_t kHoldAbove = uint64_t{64} * 1024;
constexpr auto kHold = std::chrono::microseconds(1000);
constexpr auto kLingerLimit = std::chrono::seconds(5);

}  // namespace

void SshSession::on_exit_status(ssh_session, ssh_channel, int status, void* self) {
  static_cast<SshSession*>(self)->exit_status_ = status;
}

int SshSession::on_channel_data(ssh_session, ssh_channel, void* data, uint32_t len, int is_stderr,
                                void* self) {
  auto* me = static_cast<SshSession*>(self);
  // Paused: refused, so libssh keeps it and grants the sender no new window for it.
  if (me->paused_ && !is_stderr) {
    me->held_back_ = true;
    return 0;
  }
  (is_stderr ? me->rx_err_ : me->rx_out_).append(static_cast<const char*>(data), len);
  me->rx_total_ += len;
  return static_cast<int>(len);  // all consumed: libssh buffers nothing
}

void SshSession::on_channel_close(ssh_session, ssh_channel, void* self) {
  static_cast<SshSession*>(self)->remote_closed_ = true;
}

void SshSession::on_exit_signal(ssh_session, ssh_channel, const char* signal, int core, const char*,
                                const char*, void* self) {
  auto* me = static_cast<SshSession*>(self);
  me->exit_signal_ = std::string("SIG") + (signal ? signal : "?") + (core ? " (core dumped)" : "");
}

void SshSession::start(BatchHandler on_data, Link::ClosedHandler on_closed) {
  if (phase_ != Phase::kReady) return;
  on_data_ = std::move(on_data);
  on_closed_ = std::move(on_closed);
  phase_ = Phase::kStreaming;
  rx_out_.reserve(kDeliverBatch + kMaxPacket);
  // From here on the socket carries mostly channel data: read it in large blocks.
  if (sd_.is_open()) socket_reads::attach(sd_.native_handle());
  last_rx_ = std::chrono::steady_clock::now();
  schedule_keepalive();
  // Output may already sit in libssh's buffers (it arrived with the exec reply), where no
  // fd readiness would announce it: pump once now.
  post_pump();
  arm();
}

void SshSession::send(std::string bytes) {
  if (bytes.empty() || phase_ == Phase::kDone || phase_ == Phase::kLinger) return;
  queue_.push_back(std::move(bytes));
  if (phase_ == Phase::kReady || phase_ == Phase::kStreaming) {
    flush_sends();
    arm();
  }
}

void SshSession::pause_reading(bool paused) {
  if (paused_ == paused) return;
  paused_ = paused;
  // What was held back is announced by no fd readiness: look at it now.
  if (!paused && phase_ == Phase::kStreaming) post_pump();
}

void SshSession::close() {
  user_closed_ = true;
  paused_ = false;  // what ferryd still sends is read and dropped, so it can finish
  on_data_ = nullptr;
  on_closed_ = nullptr;
  if (phase_ == Phase::kDone || phase_ == Phase::kLinger) return;
  if (opening()) {
    abort_open("closed", false);
    return;
  }
  phase_ = Phase::kLinger;
  keepalive_timer_.cancel();
  timer_.expires_after(kLingerLimit);
  std::weak_ptr<SshSession> weak = weak_from_this();
  timer_.async_wait([weak](const asio::error_code& ec) {
    if (auto self = weak.lock(); self && !ec) self->teardown();
  });
  // Not inline: close() may be called from inside a data or diagnostics callback, in the
  // middle of draining the channel.
  post_pump();
  arm();
}

void SshSession::post_pump() {
  if (pump_posted_) return;
  pump_posted_ = true;
  asio::post(io_, [self = shared_from_this()] {
    self->pump_posted_ = false;
    if (self->phase_ == Phase::kStreaming || self->phase_ == Phase::kLinger) self->on_io();
  });
}

void SshSession::pump() {
  const uint64_t before = rx_total_;
  if (!process_packets()) return;
  if (!drain_channel(true)) return;
  pumped_ = rx_total_ - before;
  flush_sends();
  if (phase_ != Phase::kStreaming) return;
  if (paused_ && !rx_out_.empty()) return;  // the end waits until every byte is delivered
  ssh_channel ch = channel_.get();
  bool exited = exit_status_ >= 0 || !exit_signal_.empty();
  if (ssh_channel_is_closed(ch) || !ssh_is_connected(session_.get()) ||
      (ssh_channel_is_eof(ch) && exited)) {
    conclude();
  }
}

// Instead of waiting for the socket to become readable: a hold after a pump that took a
// streaming amount; true while one is under way.
bool SshSession::hold_reads() {
  if (holding_) return true;
  if (phase_ != Phase::kStreaming || paused_ || pumped_ < kHoldAbove) return false;
  pumped_ = 0;
  holding_ = true;
  hold_timer_.expires_after(kHold);
  std::weak_ptr<SshSession> weak = weak_from_this();
  hold_timer_.async_wait([weak](const asio::error_code& ec) {
    auto self = weak.lock();
    if (!self) return;
    self->holding_ = false;
    if (ec) return;
    if (self->phase_ == Phase::kStreaming || self->phase_ == Phase::kLinger) self->on_io();
  });
  return true;
}

// One non-blocking round of packet processing. Channel reads stop doing this once the
// remote sent EOF (ssh_channel_poll skips ssh_handle_packets when remote_eof is set), yet
// exit-status, CLOSE and window adjusts still arrive; ssh_message_get() always processes
// (messages.c). Requests it hands back (a server opening channels) are refused.
bool SshSession::process_packets() {
  while (ssh_message msg = ssh_message_get(session_.get())) {
    ssh_message_reply_default(msg);
    ssh_message_free(msg);
  }
  sync_fd();
  if (ssh_get_status(session_.get()) & (SSH_CLOSED | SSH_CLOSED_ERROR) ||
      !ssh_is_connected(session_.get())) {
    if (phase_ == Phase::kStreaming) {
      drain_channel(true);  // what arrived before the connection broke
      if (phase_ == Phase::kStreaming) conclude();
    } else {
      teardown();
    }
    return false;
  }
  return true;
}

// Lets libssh process what the socket holds (on_channel_data takes every data packet into
// rx_out_/rx_err_) and delivers it; returns false when the stream ended with an error.
// libssh reads the socket 4 KiB per round, so one packet takes several rounds that
// deliver nothing: the loop goes on while the socket gives bytes (asio's edge-triggered
// readiness would not announce the rest), and hands data on in batches of kDeliverBatch.
bool SshSession::drain_channel(bool deliver) {
  size_t budget = kPumpBudget;
  ssh_channel ch = channel_.get();
  if (held_back_ && !paused_ && !take_held_back(deliver)) return false;
  for (;;) {
    const uint64_t before = socket_counter_.in_bytes;
    const uint64_t rx_before = rx_total_;
    // With our callback taking all data the channel buffers stay empty, so each poll runs
    // one non-blocking round of packet handling (until the remote's EOF; after that
    // process_packets() does it).
    int rc = ssh_channel_poll(ch, 0);
    writes_queued();  // a WINDOW_ADJUST it queued goes out now
    if (rc == SSH_ERROR) {
      sync_fd();
      // A channel closed without EOF also reads as an error; that is ferryd's end,
      // not the connection's.
      if (ssh_is_connected(session_.get()) && ssh_channel_is_closed(ch)) return deliver_rx(deliver);
      if (!deliver_rx(deliver)) return false;
      if (phase_ == Phase::kStreaming) {
        finish_stream("connection lost (" + error_text() + ")");
      } else {
        teardown();
      }
      return false;
    }
    const uint64_t read = socket_counter_.in_bytes - before;
    if (read == 0 && rx_total_ == rx_before) break;
    if (rx_out_.size() + rx_err_.size() >= kDeliverBatch && !deliver_rx(deliver)) return false;
    budget -= std::min<uint64_t>(budget, read);
    if (budget == 0) {
      post_pump();
      break;
    }
  }
  sync_fd();
  return deliver_rx(deliver);
}

// Stdout refused while paused waits in libssh's channel buffer; the data callback sees it
// again only when another packet comes, which a closed window may never let happen. Taken
// a batch at a time, each handed on before the next is read: handing it on may pause the
// link again (the console is still behind), and the rest then stays in libssh, whose
// channel window bounds it, instead of piling up here. Returns false when the handler
// ended the stream.
bool SshSession::take_held_back(bool deliver) {
  held_back_ = false;
  ssh_channel ch = channel_.get();
  char buf[64 * 1024];
  while (!paused_) {
    // Reads only buffered bytes (and grows the window); an empty buffer ends the loop.
    const int n = ssh_channel_read_nonblocking(ch, buf, sizeof buf, 0);
    if (n <= 0) return true;
    rx_out_.append(buf, static_cast<size_t>(n));
    rx_total_ += static_cast<uint64_t>(n);
    if (rx_out_.size() >= kDeliverBatch && !deliver_rx(deliver)) return false;
  }
  held_back_ = true;  // paused again: what is left waits in libssh
  return true;
}

// Hands taken stdout bytes to the data handler and stderr bytes to the diagnostics;
// returns false when the handler ended the stream.
bool SshSession::deliver_rx(bool deliver) {
  if (!rx_err_.empty()) {
    std::string err;
    err.swap(rx_err_);
    if (deliver && phase_ == Phase::kStreaming) take_stderr(err);
  }
  if (paused_ && phase_ == Phase::kStreaming) return true;  // kept until resumed
  if (rx_out_.empty() || !deliver || phase_ != Phase::kStreaming) {
    if (deliver && phase_ != Phase::kStreaming && phase_ != Phase::kReady) rx_out_.clear();
    return true;
  }
  // Taken out first: the handler may send, and a send may take in more channel data.
  std::string out;
  out.swap(rx_out_);
  got_stdout_ = true;
  // A copy: the handler may close the link, which clears on_data_.
  BatchHandler on_data = on_data_;
  if (on_data) on_data(out);
  if (phase_ != Phase::kStreaming) return false;
  if (rx_out_.empty()) {  // the buffer (or the handler's spare) goes back: no regrowing
    out.clear();
    rx_out_.swap(out);
    if (rx_out_.capacity() < kDeliverBatch) rx_out_.reserve(kDeliverBatch + kMaxPacket);
  }
  return true;
}

void SshSession::flush_sends() {
  ssh_channel ch = channel_.get();
  if (!ch) return;
  while (!queue_.empty()) {
    if (writes_queued()) break;  // the socket is full
    // ferryd is gone: what it was sent is moot; conclude() reports why once every byte it
    // wrote was delivered. A paused link's output may still wait in libssh then (a console
    // that stopped reading): a heartbeat written now must not end the stream before it.
    if (ssh_channel_is_closed(ch) || remote_closed_) {
      queue_.clear();
      break;
    }
    uint32_t window = ssh_channel_window_size(ch);
    if (window == 0) break;  // a WINDOW_ADJUST will arrive as readable data
    const std::string& front = queue_.front();
    uint32_t chunk =
        static_cast<uint32_t>(std::min<size_t>({front.size() - front_off_, window, kWriteChunk}));
    int n = ssh_channel_write(ch, front.data() + front_off_, chunk);
    sync_fd();
    if (n == SSH_ERROR) {
      if (ssh_is_connected(session_.get()) && (ssh_channel_is_closed(ch) || remote_closed_))
        continue;
      if (phase_ == Phase::kStreaming) {
        finish_stream("cannot write to ferryd (" + error_text() + ")");
      } else {
        teardown();
      }
      return;
    }
    front_off_ += static_cast<size_t>(n);
    if (front_off_ == front.size()) {
      queue_.pop_front();
      front_off_ = 0;
    }
    if (static_cast<uint32_t>(n) < chunk) break;
  }
  // ssh_channel_write flushes, and flushing handles incoming packets: data taken that way
  // waits in rx_out_/rx_err_ with the socket drained, where no readiness wait would see it.
  if (!rx_out_.empty() || !rx_err_.empty()) post_pump();
}

void SshSession::take_stderr(std::string_view bytes) {
  auto emit = [this](std::string line) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) return;
    stderr_last_ = line;
    if (on_stderr_) on_stderr_(line);
  };
  for (char c : bytes) {
    if (c == '\n') {
      emit(std::move(stderr_partial_));
      stderr_partial_.clear();
    } else if (stderr_partial_.size() < kMaxStderrLine) {
      stderr_partial_ += c;
    }
  }
}

void SshSession::conclude() {
  if (!stderr_partial_.empty()) take_stderr("\n");
  std::string tail = stderr_last_.empty() ? "" : ": " + stderr_last_;
  std::string reason;
  if (!exit_signal_.empty()) {
    reason = "ferryd killed by " + exit_signal_ + tail;
  } else if (exit_status_ == 0 && ssh_channel_is_eof(channel_.get())) {
    reason.clear();  // clean end of stream
  } else if (exit_status_ == 127 && !got_stdout_) {
    reason = "ferryd not found at " + ferryd_path_ +
             (stderr_last_.empty() ? "" : " (" + stderr_last_ + ")");
  } else if (exit_status_ == 126 && !got_stdout_) {
    reason = "ferryd at " + ferryd_path_ + " cannot be executed" +
             (stderr_last_.empty() ? "" : " (" + stderr_last_ + ")");
  } else if (exit_status_ >= 0) {
    reason = "ferryd exited with status " + std::to_string(exit_status_) + tail;
  } else if (!ssh_is_connected(session_.get())) {
    reason = "connection lost (" + error_text() + ")";
  } else {
    reason = "ferryd closed the channel without an exit status" + tail;
  }
  finish_stream(reason);
}

void SshSession::finish_stream(const std::string& reason) {
  Link::ClosedHandler on_closed = std::move(on_closed_);
  on_closed_ = nullptr;
  on_data_ = nullptr;
  teardown();
  if (!on_closed) return;
  // Posted: this may run inside send(). A close() before it runs still silences it.
  asio::post(io_, [self = shared_from_this(), on_closed = std::move(on_closed), reason] {
    if (!self->user_closed_) on_closed(reason);
  });
}

void SshSession::linger_step() {
  if (!session_ || !channel_) return teardown();
  if (!process_packets()) return;
  if (!drain_channel(false)) return;  // discard output nobody listens to any more
  flush_sends();
  if (phase_ != Phase::kLinger) return;
  ssh_channel ch = channel_.get();
  if (ssh_channel_is_closed(ch)) return teardown();
  if (queue_.empty() && !eof_sent_) {
    ssh_channel_send_eof(ch);
    eof_sent_ = true;
    sync_fd();
  }
  // Then wait for ferryd to exit and close the channel (or for the linger limit): closing
  // the socket now, with unread bytes in its receive buffer, makes the kernel send a RST
  // that can destroy data still on its way to ferryd.
}

void SshSession::schedule_keepalive() {
  if (options_.keepalive_s <= 0 || phase_ != Phase::kStreaming) return;
  keepalive_timer_.expires_after(std::chrono::seconds(options_.keepalive_s));
  std::weak_ptr<SshSession> weak = weak_from_this();
  keepalive_timer_.async_wait([weak](const asio::error_code& ec) {
    if (auto self = weak.lock(); self && !ec) self->on_keepalive();
  });
}

void SshSession::on_keepalive() {
  if (phase_ != Phase::kStreaming) return;
  if (socket_counter_.in_bytes != last_in_bytes_) {
    last_in_bytes_ = socket_counter_.in_bytes;
    last_rx_ = std::chrono::steady_clock::now();
  }
  auto silent = std::chrono::steady_clock::now() - last_rx_;
  auto limit = std::chrono::seconds(3 * options_.keepalive_s);
  if (silent >= limit) {
    finish_stream("no answer to keepalive for " + std::to_string(3 * options_.keepalive_s) + " s");
    return;
  }
  // ssh_send_keepalive() sends only when no earlier request is pending; a call that finds
  // the previous reply consumes it and sends nothing (ssh_global_request in channels.c).
  // Two calls therefore always leave exactly one request outstanding. sshd answers with
  // REQUEST_FAILURE, which is all we need: bytes on the socket.
  ssh_send_keepalive(session_.get());
  ssh_send_keepalive(session_.get());
  sync_fd();
  post_pump();  // the calls may have buffered channel data
  arm();
  schedule_keepalive();
}

}  // namespace ferry
