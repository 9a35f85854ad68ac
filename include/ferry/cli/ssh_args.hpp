#pragma once
/// \file
/// Open MPI's `--mca plm_rsh_args "..."`: the ssh options mpirun would put on ssh's command
/// line, read into SshSettings (never handed to a shell).

#include <string>
#include <vector>

#include "ferry/cli/ferryrun_cli.hpp"
#include "ferry/common/result.hpp"

namespace ferry {

/// Applies ssh command-line options to `ssh`: `-p PORT`, `-i FILE`, `-l USER`, `-F FILE`,
/// and `-o Key=Value` (also `-oKey=Value`, `-o "Key Value"`) for Port, User, IdentityFile,
/// StrictHostKeyChecking (no/accept-new: record unknown host keys; yes/ask: check only),
/// ServerAliveInterval (into `heartbeat_s`: JobOptions::heartbeat_s). Options that change
/// nothing for ferry (-q, -x, -T,
/// -C, -4, -6, -A, and -o LogLevel, BatchMode, ConnectTimeout, UserKnownHostsFile,
/// PasswordAuthentication, ServerAliveCountMax) are accepted and described in `notes`.
/// Words may be quoted with ' or ". Errors name the bad word; anything else is an error
/// that points to ~/.ssh/config.
Status apply_plm_rsh_args(const std::string& text, SshSettings& ssh, int& heartbeat_s,
                          std::vector<std::string>& notes);

}  // namespace ferry
