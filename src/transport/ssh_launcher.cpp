#include "ferry/transport/ssh_launcher.hpp"

#include <libssh/callbacks.h>
#include <libssh/libssh.h>

#include <algorithm>
#include <asio/post.hpp>

#include "ssh_session.hpp"

namespace ferry {
namespace {

// libssh logs through one process-wide callback. Its messages (raised to level 1 by a
// `LogLevel` line in an ssh config) must not reach the console as stray lines: they go to
// --verbose, or nowhere.
std::function<void(const std::string&)> g_libssh_log;

void forward_libssh_log(int, const char* function, const char* buffer, void*) {
  if (g_libssh_log)
    g_libssh_log(std::string("libssh: ") + (function ? function : "") + ": " +
                 (buffer ? buffer : ""));
}

/// The Link handed to the front end: a thin owner of the shared SshSession. Destroying it
/// closes the stream; the session itself may live on briefly to flush EOF.
class SshLink : public Link {
 public:
  explicit SshLink(std::shared_ptr<SshSession> session) : session_(std::move(session)) {}
  ~SshLink() override { session_->close(); }
  SshLink(const SshLink&) = delete;
  SshLink& operator=(const SshLink&) = delete;

  void start(DataHandler on_data, ClosedHandler on_closed) override {
    session_->start(std::move(on_data), std::move(on_closed));
  }
  void send(std::string bytes) override { session_->send(std::move(bytes)); }
  size_t pending_bytes() const override { return session_->pending_bytes(); }
  void pause_reading() override { session_->pause_reading(true); }
  void resume_reading() override { session_->pause_reading(false); }
  void close() override { session_->close(); }
  std::string peer_address() const override { return session_->peer_address(); }
  std::string local_address() const override { return session_->local_address(); }
  std::string describe() const override { return session_->describe(); }

 private:
  std::shared_ptr<SshSession> session_;
};

}  // namespace

std::string shell_quote(const std::string& word) {
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

SshLauncher::SshLauncher(asio::io_context& io, SshOptions options)
    : io_(io), options_(std::move(options)) {
  g_libssh_log = options_.verbose ? options_.log : nullptr;
  ssh_set_log_callback(&forward_libssh_log);
}

SshLauncher::~SshLauncher() {
  for (auto& weak : opening_) {
    if (auto session = weak.lock()) session->abort_open("cancelled", false);
  }
}

void SshLauncher::async_open(const HostEntry& host, const DaemonCommand& cmd, OpenHandler handler) {
  std::erase_if(opening_, [](const std::weak_ptr<SshSession>& w) { return w.expired(); });
  std::string path = !host.ferryd.empty() ? host.ferryd : cmd.ferryd_path;
  auto session = std::make_shared<SshSession>(io_, options_, host, path, cmd.on_stderr);
  opening_.push_back(session);
  // The completion holds the session until the handler has run; on success ownership moves
  // into the SshLink, on failure the session is released with the handler.
  session->open([session, handler = std::move(handler)](const Status& status) mutable {
    if (!status) {
      handler(Result<std::unique_ptr<Link>>(status.error()));
      return;
    }
    handler(Result<std::unique_ptr<Link>>(std::make_unique<SshLink>(std::move(session))));
  });
}

void SshLauncher::cancel_all() {
  for (auto& weak : opening_) {
    if (auto session = weak.lock()) session->abort_open("cancelled", true);
  }
  opening_.clear();
}

}  // namespace ferry
