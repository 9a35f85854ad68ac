// The open half of SshSession: options and ssh_config, non-blocking connect, host key,
// public-key authentication, exec of ferryd. Every libssh call here is non-blocking except
// reading known_hosts / key files; SSH_AGAIN means "wait for the fd and call again".

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/auxv.h>
#include <sys/socket.h>
#include <unistd.h>

#include <asio/post.hpp>
#include <cerrno>
#include <cstring>

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

// Whether this CPU encrypts AES in hardware (x86 AES-NI, ARMv8 crypto extensions).
bool cpu_has_aes() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_cpu_supports("aes");
#elif defined(__aarch64__) && defined(HWCAP_AES)
  return (getauxval(AT_HWCAP) & HWCAP_AES) != 0;
#else
  return false;
#endif
}

// AES-GCM first, then libssh's own default order.
constexpr const char* kAesFirstCiphers =
    "aes128-gcm@openssh.com,aes256-gcm@openssh.com,chacha20-poly1305@openssh.com,"
    "aes128-ctr,aes192-ctr,aes256-ctr";

// "~/.ssh/known_hosts" when `path` is the default file, so the hint reads like ssh's.
std::string display_path(const std::string& path) {
  std::string home = ssh_home_dir();
  if (!home.empty() && path.starts_with(home + "/")) return "~" + path.substr(home.size());
  return path;
}

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

SshSession::SshSession(asio::io_context& io, const SshOptions& options, HostEntry host,
                       std::string ferryd_path, std::function<void(const std::string&)> on_stderr)
    : io_(io),
      options_(options),
      host_(std::move(host)),
      ferryd_path_(std::move(ferryd_path)),
      on_stderr_(std::move(on_stderr)),
      command_(shell_quote(ferryd_path_) + " --stdio"),
      sd_(io),
      timer_(io),
      keepalive_timer_(io) {
  port_ = host_.port > 0 ? host_.port : (options_.default_port > 0 ? options_.default_port : 22);
}

SshSession::~SshSession() {
  on_data_ = nullptr;
  on_closed_ = nullptr;
  teardown();
}

std::string SshSession::describe() const {
  const std::string& name = host_.name;
  if (name.find(':') != std::string::npos) return "[" + name + "]:" + std::to_string(port_);
  return name + ":" + std::to_string(port_);
}

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

Status SshSession::configure() {
  session_.reset(ssh_new());
  if (!session_) return make_error("cannot create an SSH session (out of memory)");
  ssh_session s = session_.get();
  ssh_set_blocking(s, 0);
  // Counts every byte libssh reads from the socket, whichever call read it.
  ssh_set_counters(s, &socket_counter_, nullptr);
  if (ssh_options_set(s, SSH_OPTIONS_HOST, host_.name.c_str()) != SSH_OK) {
    return make_error("bad host name: " + error_text());
  }
  // Parse the config before applying our overrides: ssh_connect() parses ~/.ssh/config
  // itself unless opts.config_processed is set, which ssh_options_parse_config() does
  // (options.c, client.c in 0.10); values set after it are therefore final.
  const char* config = nullptr;
  if (!options_.config_file.empty()) {
    if (access(options_.config_file.c_str(), R_OK) != 0) {
      return make_error("cannot read ssh config " + options_.config_file + ": " +
                        std::strerror(errno));
    }
    config = options_.config_file.c_str();
  }
  // Rank output is most of what crosses the link, and sshd encrypts it. libssh's first
  // choice, chacha20-poly1305, runs in OpenSSH's portable C code on the sshd side, while
  // AES-GCM runs in OpenSSL's AES instructions: with those present, AES-GCM costs the
  // remote host less CPU per byte. Set before the config is parsed, so a Ciphers line in
  // ssh_config still decides.
  if (cpu_has_aes()) {
    ssh_options_set(s, SSH_OPTIONS_CIPHERS_C_S, kAesFirstCiphers);
    ssh_options_set(s, SSH_OPTIONS_CIPHERS_S_C, kAesFirstCiphers);
  }
  if (ssh_options_parse_config(s, config) < 0) {
    return make_error("error in ssh config: " + error_text());
  }
  const std::string& user = !host_.user.empty() ? host_.user : options_.default_user;
  if (!user.empty() && ssh_options_set(s, SSH_OPTIONS_USER, user.c_str()) != SSH_OK) {
    return make_error("bad user name '" + user + "': " + error_text());
  }
  int port = host_.port > 0 ? host_.port : options_.default_port;
  if (port > 0 && ssh_options_set(s, SSH_OPTIONS_PORT, &port) != SSH_OK) {
    return make_error("bad port " + std::to_string(port) + ": " + error_text());
  }
  // StrictHostKeyChecking=no in the config makes libssh report unknown keys as OK
  // (knownhosts.c); we want the true state and apply the policy ourselves.
  int strict = 1;
  ssh_options_set(s, SSH_OPTIONS_STRICTHOSTKEYCHECK, &strict);
  accept_new_ = options_.accept_new_host_keys ||
                strict_host_key_accepts_new(
                    ssh_config_value(options_.config_file, host_.name, "StrictHostKeyChecking"));

  unsigned int effective_port = 22;
  ssh_options_get_port(s, &effective_port);
  port_ = static_cast<int>(effective_port);
  target_host_ = ssh_option_string(s, SSH_OPTIONS_HOST);
  user_ = ssh_option_string(s, SSH_OPTIONS_USER);

  if (!options_.identity_file.empty()) {
    ssh_key key = nullptr;
    int rc = ssh_pki_import_privkey_file(options_.identity_file.c_str(), nullptr, nullptr, nullptr,
                                         &key);
    if (rc == SSH_EOF) {
      return make_error("cannot read identity file " + options_.identity_file);
    }
    if (rc != SSH_OK) {
      // Most likely passphrase-protected: the agent may still hold it.
      log(describe() + ": cannot load " + options_.identity_file +
          " without a passphrase; trying the agent and default keys");
    } else {
      identity_.reset(key);
    }
  }
  return {};
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
      default:
        return;
    }
    sync_fd();
    if (step == Step::kStop) return;
    if (step == Step::kAgain) {
      arm();
      return;
    }
  }
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

SshSession::Step SshSession::exec_step() {
  phase_text_ = "starting ferryd";
  int rc = ssh_channel_request_exec(channel_.get(), command_.c_str());
  if (rc == SSH_AGAIN) return Step::kAgain;
  if (rc != SSH_OK) {
    fail_open("the server refused to run " + command_ + ": " + error_text());
    return Step::kStop;
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

void SshSession::on_exit_signal(ssh_session, ssh_channel, const char* signal, int core, const char*,
                                const char*, void* self) {
  auto* me = static_cast<SshSession*>(self);
  me->exit_signal_ = std::string("SIG") + (signal ? signal : "?") + (core ? " (core dumped)" : "");
}

// ---- shared between both halves -------------------------------------------------------

void SshSession::arm() {
  if (!sd_.is_open() || phase_ == Phase::kDone) return;
  auto self = shared_from_this();
  bool want_read = phase_ != Phase::kReady;
  if (want_read && !read_armed_) {
    read_armed_ = true;
    sd_.async_wait(asio::posix::descriptor_base::wait_read, [self](const asio::error_code& ec) {
      self->read_armed_ = false;
      if (ec) return;
      self->last_rx_ = std::chrono::steady_clock::now();
      self->on_io();
    });
  }
  if (!write_armed_ && (ssh_get_poll_flags(session_.get()) & SSH_WRITE_PENDING)) {
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

void SshSession::sync_fd() {
  // libssh closes its socket on errors; stop watching the number before it is reused.
  if (!sd_.is_open()) return;
  if (!session_ || ssh_get_fd(session_.get()) != sd_.native_handle()) {
    sd_.release();
  }
}

void SshSession::teardown() {
  phase_ = Phase::kDone;
  timer_.cancel();
  keepalive_timer_.cancel();
  if (sd_.is_open()) sd_.release();  // the fd belongs to libssh
  channel_.reset();                  // before ssh_disconnect(), which frees channels
  if (session_) {
    ssh_disconnect(session_.get());  // queues DISCONNECT, one non-blocking write, close
    session_.reset();
  }
  identity_.reset();
  queue_.clear();
  queued_ = 0;
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
