#pragma once
/// \file
/// A minimal ssh_config reader for the keywords libssh parses but cannot report back.
///
/// libssh 0.10 reads `StrictHostKeyChecking` only as yes/no (config.c: ssh_config_get_yesno
/// ignores "accept-new") and has no ssh_options_get() for it, so ferry looks the keyword up
/// itself. Supported: `Host` patterns (`*`, `?`, `!negation`), `Match all`, `Include`
/// (globs, relative to ~/.ssh or /etc/ssh), `Keyword value` and `Keyword=value`. Other
/// `Match` criteria are treated as not matching. First value wins, as in OpenSSH.

#include <string>
#include <string_view>

namespace ferry {

/// The home directory libssh uses for "~" and "%d": the passwd entry of the real uid, else
/// $HOME (misc.c: ssh_get_user_home_dir ignores $HOME when the passwd entry exists).
std::string ssh_home_dir();

/// First value of `keyword` (case-insensitive) that applies to `host` (the name as typed,
/// before HostName) in `config_file`, or in ~/.ssh/config then /etc/ssh/ssh_config when
/// `config_file` is empty. "" when no block sets it or the files cannot be read.
std::string ssh_config_value(const std::string& config_file, const std::string& host,
                             std::string_view keyword);

/// True when a `StrictHostKeyChecking` value means "record unknown keys" (accept-new,
/// no, off).
bool strict_host_key_accepts_new(const std::string& value);

}  // namespace ferry
