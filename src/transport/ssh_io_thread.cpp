#include "ssh_io_thread.hpp"

#include <libssh/callbacks.h>
#include <libssh/libssh.h>

#include "ssh_session.hpp"

namespace ferry {
namespace {

// libssh's log callback, level and user data are thread-local (log.c): each thread that
// runs sessions installs its own forwarder, so a `LogLevel` in an ssh config never writes
// libssh's own lines to the console as stray text.
thread_local SshIoThread::Log t_libssh_log;

void forward_libssh_log(int, const char* function, const char* buffer, void*) {
  if (t_libssh_log)
    t_libssh_log(std::string("libssh: ") + (function ? function : "") + ": " +
                 (buffer ? buffer : ""));
}

void install_libssh_log(SshIoThread::Log log) {
  t_libssh_log = std::move(log);
  ssh_set_log_callback(&forward_libssh_log);
}

// Buffers kept for a thread's batches: the four a session at full speed has on their way
// (SshLink::kInFlight) and as many again for the others.
constexpr std::size_t kSpareBatches = 8;
// A batch is 256 KiB and a packet (SshSession's kDeliverBatch); one far larger is let go.
constexpr std::size_t kSpareCapacity = std::size_t{1} << 20;

}  // namespace

std::string SshIoThread::take_spare() {
  std::lock_guard lock(spare_mu_);
  if (spares_.empty()) return {};
  std::string b = std::move(spares_.back());
  spares_.pop_back();
  return b;
}

void SshIoThread::give_spare(std::string buffer) {
  if (buffer.capacity() > kSpareCapacity) return;  // a batch grown past the usual: not kept
  buffer.clear();
  std::lock_guard lock(spare_mu_);
  if (spares_.size() < kSpareBatches) spares_.push_back(std::move(buffer));
}

SshIoThread::SshIoThread(Log log)
    : own_(std::make_unique<asio::io_context>()), work_(std::in_place, own_->get_executor()) {
  thread_ = std::thread([this, log = std::move(log)]() mutable {
    install_libssh_log(std::move(log));
    own_->run();
  });
}

SshIoThread::SshIoThread(asio::io_context& loop, Log log) : loop_(&loop) {
  install_libssh_log(std::move(log));
}

SshIoThread::~SshIoThread() { stop(); }

void SshIoThread::stop() {
  stopped_.store(true, std::memory_order_release);
  if (!own_) {
    for (auto& weak : opening)
      if (auto session = weak.lock()) session->abort_open("cancelled", false);
    opening.clear();
    return;
  }
  work_.reset();
  own_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace ferry
