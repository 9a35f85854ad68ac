#include "ssh_io_thread.hpp"

#include <libssh/callbacks.h>
#include <libssh/libssh.h>

namespace ferry {
namespace {

// libssh's log callback, level and user data are thread-local (log.c): each I/O thread
// installs its own forwarder, so a `LogLevel` in an ssh config never writes libssh's own
// lines to the console as stray text.
thread_local std::function<void(const std::string&)> t_libssh_log;

void forward_libssh_log(int, const char* function, const char* buffer, void*) {
  if (t_libssh_log)
    t_libssh_log(std::string("libssh: ") + (function ? function : "") + ": " +
                 (buffer ? buffer : ""));
}

}  // namespace

SshIoThread::SshIoThread(std::function<void(const std::string&)> log)
    : work_(io_.get_executor()), thread_([this, log = std::move(log)]() mutable {
        t_libssh_log = std::move(log);
        ssh_set_log_callback(&forward_libssh_log);
        io_.run();
      }) {}

SshIoThread::~SshIoThread() { stop(); }

void SshIoThread::stop() {
  work_.reset();
  io_.stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace ferry
