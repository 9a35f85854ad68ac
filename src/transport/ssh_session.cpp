// SshSession's core, shared by its two halves (ssh_session_open.cpp and
// ssh_session_stream.cpp): construction and teardown, the asio waits on libssh's socket and
// the dispatch of its readiness to the half in charge, logging and libssh's error text.

#include "ssh_session.hpp"

#include "ferry/transport/socket_reads.hpp"

namespace ferry {

SshSession::SshSession(asio::io_context& io, SshOptions options, HostEntry host,
                       std::string ferryd_path, std::function<void(const std::string&)> on_stderr)
    : io_(io),
      options_(std::move(options)),
      host_(std::move(host)),
      ferryd_path_(std::move(ferryd_path)),
      on_stderr_(std::move(on_stderr)),
      command_(shell_quote(ferryd_path_) + " " + options_.ferryd_mode),
      port_(host_.port > 0 ? host_.port : (options_.default_port > 0 ? options_.default_port : 22)),
      sd_(io),
      timer_(io),
      keepalive_timer_(io),
      hold_timer_(io) {}

SshSession::~SshSession() {
  on_data_ = nullptr;
  on_closed_ = nullptr;
  // teardown() cancels timers, which throws only when the reactor itself fails; a
  // destructor must not throw, and the libssh handles are freed by their owners regardless.
  try {
    teardown();
  } catch (...) {
  }
}

std::string SshSession::describe() const {
  const std::string& name = host_.name;
  if (name.find(':') != std::string::npos) return "[" + name + "]:" + std::to_string(port_);
  return name + ":" + std::to_string(port_);
}

void SshSession::arm() {
  if (!sd_.is_open() || phase_ == Phase::kDone) return;
  // Bytes libssh's reads left buffered (socket_reads.hpp) are announced by no readiness.
  if ((phase_ == Phase::kStreaming || phase_ == Phase::kLinger) &&
      socket_reads::buffered(sd_.native_handle()) > 0)
    post_pump();
  auto self = shared_from_this();
  bool want_read = phase_ != Phase::kReady;
  if (want_read && !read_armed_ && !hold_reads()) {
    read_armed_ = true;
    sd_.async_wait(asio::posix::descriptor_base::wait_read, [self](const asio::error_code& ec) {
      self->read_armed_ = false;
      if (ec) return;
      self->last_rx_ = std::chrono::steady_clock::now();
      self->on_io();
    });
  }
  if (!write_armed_ && writes_queued()) {
    write_armed_ = true;
    sd_.async_wait(asio::posix::descriptor_base::wait_write, [self](const asio::error_code& ec) {
      self->write_armed_ = false;
      if (ec) return;
      self->on_io();
    });
  }
}

void SshSession::on_io() {
  if (opening()) {
    run_open();
  } else if (phase_ == Phase::kReady) {
    // Only writes are watched before start(): push libssh's buffered output.
    ssh_blocking_flush(session_.get(), 0);
    sync_fd();
  } else if (phase_ == Phase::kStreaming) {
    pump();
  } else if (phase_ == Phase::kLinger) {
    linger_step();
  }
  arm();
}

// libssh's SSH_WRITE_PENDING says only that it wants to hear of POLLOUT, which it keeps
// wanting after any poll that also reported POLLIN (socket.c forgets its poll handle
// once it has read): no sign of bytes waiting. ssh_blocking_flush() with no time to
// wait returns at once when its output buffer is empty, and otherwise writes what the
// socket takes; SSH_AGAIN means bytes are still waiting.
bool SshSession::writes_queued() {
  if (!session_) return false;
  const int fd = sd_.is_open() ? sd_.native_handle() : -1;
  socket_reads::writes_pending(fd, true);  // the flush's poll asks the kernel
  const bool queued = ssh_blocking_flush(session_.get(), 0) == SSH_AGAIN;
  socket_reads::writes_pending(fd, queued);
  return queued;
}

void SshSession::sync_fd() {
  // libssh closes its socket on errors; stop watching the number before it is reused.
  if (!sd_.is_open()) return;
  if (!session_ || ssh_get_fd(session_.get()) != sd_.native_handle()) {
    socket_reads::detach(sd_.native_handle());
    sd_.release();
  }
}

void SshSession::teardown() {
  phase_ = Phase::kDone;
  timer_.cancel();
  keepalive_timer_.cancel();
  hold_timer_.cancel();
  if (sd_.is_open()) {
    socket_reads::detach(sd_.native_handle());
    sd_.release();  // the fd belongs to libssh
  }
  channel_.reset();  // before ssh_disconnect(), which frees channels
  if (session_) {
    ssh_disconnect(session_.get());  // queues DISCONNECT, one non-blocking write, close
    session_.reset();
  }
  identity_.reset();
  queue_.clear();
}

void SshSession::log(const std::string& line) const {
  if (options_.verbose && options_.log) options_.log(line);
}

std::string SshSession::error_text() const {
  const char* text = session_ ? ssh_get_error(session_.get()) : nullptr;
  std::string out = (text && *text) ? text : "unknown error";
  while (!out.empty() && (out.back() == '\n' || out.back() == '.')) out.pop_back();
  return out;
}

}  // namespace ferry
