// The open half of SshSession: non-blocking connect, host key, public-key authentication,
// exec of ferryd (the options are set in ssh_session_config.cpp). Every libssh call here is
// non-blocking except reading known_hosts / key files; SSH_AGAIN means "wait for the fd and
// call again".

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <asio/post.hpp>

#include "ferry/transport/ssh_config_scan.hpp"
#include "ssh_session.hpp"

namespace ferry {
namespace {

// The numeric address of one end of a connected socket: the peer's, or ours (`local`).
std::string numeric_address(int fd, bool local) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  auto* sa = reinterpret_cast<sockaddr*>(&addr);
  if (fd < 0 || (local ? getsockname(fd, sa, &len) : getpeername(fd, sa, &len)) != 0) return {};
  char host[NI_MAXHOST] = {0};
  if (getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, host, sizeof(host), nullptr, 0,
                  NI_NUMERICHOST) != 0) {
    return {};
  }
  std::string out = host;
  if (out.starts_with("::ffff:") && out.find('.') != std::string::npos) out.erase(0, 7);
  return out;
}

// "~/.ssh/known_hosts" when `path` is the default file, so the hint reads like ssh's.
std::string display_path(const std::string& path) {
  std::string home = ssh_home_dir();
  if (!home.empty() && path.starts_with(home + "/")) return "~" + path.substr(home.size());
  return path;
}

}  // namespace

void SshSession::open(OpenDone done) {
  open_done_ = std::move(done);
  phase_ = Phase::kConnect;
  if (Status st = configure(); !st) {
    fail_open(st.error().message);
    return;
  }
  int limit = options_.connect_timeout_s > 0 ? options_.connect_timeout_s : 30;
  timer_.expires_after(std::chrono::seconds(limit));
  std::weak_ptr<SshSession> weak = weak_from_this();
  timer_.async_wait([weak, limit](const asio::error_code& ec) {
    auto self = weak.lock();
    if (ec || !self || !self->opening()) return;
    self->fail_open("connection timed out after " + std::to_string(limit) + " s (" +
                    self->phase_text_ + ")");
  });
  log(describe() + ": connecting to " + target_host_ + " port " + std::to_string(port_) +
      (user_.empty() ? "" : " as " + user_));
  run_open();
}
void SshSession::run_open() {
  while (opening()) {
    Step step = Step::kStop;
    switch (phase_) {
      case Phase::kConnect:
        step = connect_step();
        break;
      case Phase::kHostKey:
        step = host_key_step();
        break;
      case Phase::kAuthIdentity:
        step = auth_identity_step();
        break;
      case Phase::kAuthAuto:
        step = auth_auto_step();
        break;
      case Phase::kChannel:
        step = channel_step();
        break;
      case Phase::kExec:
        step = exec_step();
        break;
      case Phase::kTryInstalled:
        step = try_installed_step();
        break;
      case Phase::kShipTalk:
        step = ship_talk_step();
        break;
      default:
        return;
    }
    sync_fd();
    if (step == Step::kStop) return;
    if (step == Step::kAgain) {
      ack_now();
      arm();
      return;
    }
  }
}

// sshd leaves Nagle on for sessions without a terminal, and sends some handshake messages
// back to back (after authentication: its host key notice, then the reply we wait for). The
// second then waits for our ACK of the first, which Linux delays up to 40 ms when we have
// nothing to send. TCP_QUICKACK sends an ACK that is due at once; it is not sticky, so it is
// set each time we go back to waiting for the server during the open.
void SshSession::ack_now() {
  if (!sd_.is_open()) return;
  int one = 1;
  setsockopt(sd_.native_handle(), IPPROTO_TCP, TCP_QUICKACK, &one, sizeof(one));
}

SshSession::Step SshSession::connect_step() {
  phase_text_ = "connecting";
  int rc = ssh_connect(session_.get());
  int fd = ssh_get_fd(session_.get());
  if (fd >= 0 && !sd_.is_open()) {
    asio::error_code ec;
    sd_.assign(fd, ec);
    if (ec) {
      fail_open("cannot watch the SSH socket: " + ec.message());
      return Step::kStop;
    }
  }
  if (rc == SSH_AGAIN) return Step::kAgain;
  if (rc != SSH_OK) {
    fail_open("cannot connect: " + error_text());
    return Step::kStop;
  }
  peer_ = numeric_address(fd, false);
  local_ = numeric_address(fd, true);
  user_ = ssh_option_string(session_.get(), SSH_OPTIONS_USER);  // set by ssh_options_apply
  const char* banner = ssh_get_serverbanner(session_.get());
  const char* cipher = ssh_get_cipher_in(session_.get());
  log(describe() + ": connected to " + peer_ + ", server " + (banner ? banner : "?") + ", cipher " +
      (cipher ? cipher : "?"));
  phase_ = Phase::kHostKey;
  return Step::kNext;
}

SshSession::Step SshSession::host_key_step() {
  phase_text_ = "checking the host key";
  ssh_session s = session_.get();
  ssh_key raw = nullptr;
  if (ssh_get_server_publickey(s, &raw) != SSH_OK) {
    fail_open("server sent no host key: " + error_text());
    return Step::kStop;
  }
  SshKeyPtr key(raw);
  std::string fingerprint = ssh_fingerprint(key.get());
  std::string known_hosts = ssh_option_string(s, SSH_OPTIONS_KNOWNHOSTS);
  switch (ssh_session_is_known_server(s)) {
    case SSH_KNOWN_HOSTS_OK:
      log(describe() + ": host key " + fingerprint + " matches " + display_path(known_hosts));
      break;
    case SSH_KNOWN_HOSTS_CHANGED:
    case SSH_KNOWN_HOSTS_OTHER: {
      // known_hosts names a non-22 port as [host]:port, and so must ssh-keygen -R.
      std::string entry =
          port_ == 22 ? target_host_ : "[" + target_host_ + "]:" + std::to_string(port_);
      fail_open("host key CHANGED (fingerprint " + fingerprint +
                "); if the host was rebuilt, remove the old key with: ssh-keygen -R '" + entry +
                "' -f " + display_path(known_hosts) +
                " (a container keeps its key across re-creation only with a host-key volume)");
      return Step::kStop;
    }
    case SSH_KNOWN_HOSTS_UNKNOWN:
    case SSH_KNOWN_HOSTS_NOT_FOUND:
      if (!accept_new_) {
        std::string port = port_ == 22 ? "" : "-p " + std::to_string(port_) + " ";
        fail_open("unknown host key " + fingerprint + "; add it with: ssh-keyscan " + port +
                  target_host_ + " >> " + display_path(known_hosts) + ", or pass --ssh-accept-new");
        return Step::kStop;
      }
      if (ssh_session_update_known_hosts(s) != SSH_OK) {
        fail_open("cannot record the host key: " + error_text());
        return Step::kStop;
      }
      log(describe() + ": added host key " + fingerprint + " to " + display_path(known_hosts));
      break;
    case SSH_KNOWN_HOSTS_ERROR:
    default:
      fail_open("cannot check the host key against " + display_path(known_hosts) + ": " +
                error_text());
      return Step::kStop;
  }
  phase_ = identity_ ? Phase::kAuthIdentity : Phase::kAuthAuto;
  return Step::kNext;
}

SshSession::Step SshSession::auth_identity_step() {
  phase_text_ = "authenticating";
  int rc = ssh_userauth_publickey(session_.get(), nullptr, identity_.get());
  if (rc == SSH_AUTH_AGAIN) return Step::kAgain;
  if (rc == SSH_AUTH_SUCCESS) {
    log(describe() + ": authenticated as " + user_ + " with " + options_.identity_file);
    phase_ = Phase::kChannel;
    return Step::kNext;
  }
  if (rc == SSH_AUTH_ERROR) {
    fail_open("authentication error: " + error_text());
    return Step::kStop;
  }
  log(describe() + ": " + options_.identity_file + " refused; trying the agent and default keys");
  phase_ = Phase::kAuthAuto;
  return Step::kNext;
}

SshSession::Step SshSession::auth_auto_step() {
  phase_text_ = "authenticating";
  int rc = ssh_userauth_publickey_auto(session_.get(), nullptr, nullptr);
  if (rc == SSH_AUTH_AGAIN) return Step::kAgain;
  if (rc == SSH_AUTH_SUCCESS) {
    log(describe() + ": authenticated as " + user_ + " (agent, ssh config or default keys)");
    phase_ = Phase::kChannel;
    return Step::kNext;
  }
  if (rc == SSH_AUTH_ERROR) {
    fail_open("authentication error: " + error_text());
    return Step::kStop;
  }
  std::string message = "authentication failed (publickey) for user " + user_;
  if (rc == SSH_AUTH_PARTIAL) message += "; the server asks for a second method too";
  fail_open(message);
  return Step::kStop;
}

bool SshSession::shipping() const {
  return options_.ship && options_.ship->mode != ShipMode::kNever;
}

SshSession::Step SshSession::channel_step() {
  phase_text_ = "opening a channel";
  if (!channel_) {
    channel_.reset(ssh_channel_new(session_.get()));
    if (!channel_) {
      fail_open("cannot create a channel: " + error_text());
      return Step::kStop;
    }
    ssh_callbacks_init(&channel_cb_);
    channel_cb_.userdata = this;
    channel_cb_.channel_exit_status_function = &SshSession::on_exit_status;
    channel_cb_.channel_exit_signal_function = &SshSession::on_exit_signal;
    channel_cb_.channel_data_function = &SshSession::on_channel_data;
    channel_cb_.channel_close_function = &SshSession::on_channel_close;
    ssh_set_channel_callbacks(channel_.get(), &channel_cb_);
  }
  int rc = ssh_channel_open_session(channel_.get());
  if (rc == SSH_AGAIN) return Step::kAgain;
  if (rc != SSH_OK) {
    fail_open("cannot open a session channel (sshd MaxSessions?): " + error_text());
    return Step::kStop;
  }
  phase_ = Phase::kExec;
  return Step::kNext;
}

bool SshSession::trying_installed() const {
  return shipping() && options_.ship->mode == ShipMode::kAuto && !options_.ship->greeting.empty() &&
         !tried_installed_;
}

SshSession::Step SshSession::exec_step() {
  const bool program = shipping() && !trying_installed();
  phase_text_ = program ? "looking for ferryd" : "starting ferryd";
  if (shipping() && ship_began_ == std::chrono::steady_clock::time_point{})
    ship_began_ = std::chrono::steady_clock::now();
  if (program) command_ = ship_command(*options_.ship, ferryd_path_, tried_installed_);
  int rc = ssh_channel_request_exec(channel_.get(), command_.c_str());
  if (rc == SSH_AGAIN) return Step::kAgain;
  if (rc != SSH_OK) {
    fail_open(std::string("the server refused to run ") +
              (program ? "sh, to look for ferryd" : command_) + ": " + error_text());
    return Step::kStop;
  }
  if (shipping()) {
    phase_ = program ? Phase::kShipTalk : Phase::kTryInstalled;
    return Step::kNext;
  }
  log(describe() + ": started " + command_);
  phase_ = Phase::kReady;
  timer_.cancel();
  finish_open({});
  return Step::kStop;
}

void SshSession::abort_open(const std::string& reason, bool notify) {
  if (!opening()) return;
  if (!notify) open_done_ = nullptr;
  fail_open(reason);
}

void SshSession::fail_open(const std::string& message) {
  if (phase_ == Phase::kDone) return;
  teardown();
  finish_open(make_error(describe() + ": " + message));
}

void SshSession::finish_open(Status status) {
  if (!open_done_) return;
  // Posted so that a handler never runs inside async_open() or inside a libssh callback.
  asio::post(io_, [done = std::move(open_done_), status = std::move(status)]() mutable {
    done(std::move(status));
  });
  open_done_ = nullptr;
}

}  // namespace ferry
