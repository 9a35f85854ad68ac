#pragma once
/// \file
/// Directories only their user may use (the jobs of --detach, the cache of --sync): made 0700
/// where missing, and refused when another user owns them or may write them.

#include <string>
#include <string_view>

#include "ferry/common/result.hpp"

namespace ferry {

/// Makes `path` (and its parents) 0700 where missing, then checks the last one: a directory,
/// this user's, not writable by group or others (readable ones are made private). Error, one
/// line naming it: "PATH: owned by uid N, not by you: ferry keeps WHAT only in a directory of
/// your own", "PATH: writable by others (mode 777); chmod 700 it".
Status make_private_dir(const std::string& path, std::string_view what);

/// `<state>/ferry/<name>` (the jobs of --detach, the warm pools), made private where missing,
/// with `<state>/ferry` private too: <state> is `xdg_state_home` when it is absolute, else
/// `home`/.local/state. Error, one line: "no home directory to keep WHAT in (set HOME or
/// XDG_STATE_HOME)", or make_private_dir's.
Result<std::string> ferry_state_dir(const std::string& home, const std::string& xdg_state_home,
                                    const std::string& name, std::string_view what);
/// The same for this process: $HOME (else the user's password entry) and $XDG_STATE_HOME.
Result<std::string> ferry_state_dir(const std::string& name, std::string_view what);
/// Where ferry_state_dir(name, ...) is for this process, made or not (nothing is created).
Result<std::string> ferry_state_path(const std::string& name, std::string_view what);

}  // namespace ferry
