// How an SshSession sets up libssh: the host entry's name, user and port, ssh_config
// (parsed first, so that what is set after it is final), the cipher order, the host-key
// policy and the identity file.

#include <sys/auxv.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ferry/transport/ssh_config_scan.hpp"
#include "ssh_session.hpp"

namespace ferry {
namespace {

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

}  // namespace

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
  // TCP_NODELAY: libssh writes a handshake's packets one send() each (KEXINIT then
  // KEX_ECDH_INIT, NEWKEYS then SERVICE_REQUEST, ...). With Nagle on, the second waits
  // for the ACK of the first, which the server delays by its delayed-ACK timer (40 ms on
  // Linux) when it has nothing to send back: three such waits made most of a launch.
  int nodelay = 1;
  ssh_options_set(s, SSH_OPTIONS_NODELAY, &nodelay);
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

}  // namespace ferry
