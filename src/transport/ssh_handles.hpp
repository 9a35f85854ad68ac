#pragma once
/// \file
/// RAII owners for libssh handles.
///
/// Order matters: libssh frees every channel of a session in ssh_disconnect() and ssh_free()
/// (client.c, session.c in 0.10), so a SshChannelPtr must be reset before its session is
/// disconnected or freed, or the channel is freed twice.

#include <libssh/libssh.h>

#include <memory>
#include <string>

namespace ferry {

struct SshSessionDeleter {
  void operator()(ssh_session s) const { ssh_free(s); }
};
struct SshChannelDeleter {
  void operator()(ssh_channel c) const { ssh_channel_free(c); }
};
struct SshKeyDeleter {
  void operator()(ssh_key k) const { ssh_key_free(k); }
};

/// Owns a session (ssh_new / ssh_free).
using SshSessionPtr = std::unique_ptr<ssh_session_struct, SshSessionDeleter>;
/// Owns a channel (ssh_channel_new / ssh_channel_free); reset it before its session.
using SshChannelPtr = std::unique_ptr<ssh_channel_struct, SshChannelDeleter>;
/// Owns a key (ssh_pki_import_* / ssh_key_free).
using SshKeyPtr = std::unique_ptr<ssh_key_struct, SshKeyDeleter>;

/// Reads a string option back (ssh_options_get); "" when libssh has none.
inline std::string ssh_option_string(ssh_session s, enum ssh_options_e type) {
  char* value = nullptr;
  if (ssh_options_get(s, type, &value) != SSH_OK || value == nullptr) return {};
  std::string out(value);
  ssh_string_free_char(value);
  return out;
}

/// "SHA256:base64" fingerprint of `key`, or "" if it cannot be computed.
inline std::string ssh_fingerprint(ssh_key key) {
  unsigned char* hash = nullptr;
  size_t len = 0;
  if (ssh_get_publickey_hash(key, SSH_PUBLICKEY_HASH_SHA256, &hash, &len) != SSH_OK) {
    return {};
  }
  char* text = ssh_get_fingerprint_hash(SSH_PUBLICKEY_HASH_SHA256, hash, len);
  ssh_clean_pubkey_hash(&hash);
  if (text == nullptr) return {};
  std::string out(text);
  ssh_string_free_char(text);
  return out;
}

}  // namespace ferry
