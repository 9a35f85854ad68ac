#pragma once
/// \file
/// Environment entries ("NAME=value") and the initial environments of other processes, read
/// from <proc>/<pid>/environ (readable by the process's owner and root only). The job
/// secret check (rendezvous/peer_auth) and the sweep of a job's leftover processes (daemon)
/// both find processes by what their environment carries.

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/common/result.hpp"

namespace ferry {

/// Whether `name` can name an environment variable in a shell: letters, digits and '_', not
/// starting with a digit ("NCCL_DEBUG" yes; "", "2X", "A-B" no).
bool is_variable_name(std::string_view name);

/// The value of `entry` when it is "`name`=value" ("PATH=/bin" names PATH, "PATHS=x" and
/// "PATH" do not); nullopt otherwise.
std::optional<std::string_view> env_entry_value(std::string_view entry, std::string_view name);

/// The value `env` gives `name`: its last entry naming it wins (ferryd's environment first,
/// then the user's -x variables); nullopt when no entry names it.
std::optional<std::string_view> env_value(const std::vector<std::string>& env,
                                          std::string_view name);

/// The entries of an environ block: NUL-terminated "K=V" strings ("A=1\0B=2\0" →
/// {"A=1", "B=2"}); empty entries are dropped and a missing last NUL is tolerated.
std::vector<std::string> split_environ(std::string_view block);

/// A /proc entry name as a pid: positive decimal digits only ("1234"); nullopt for "self",
/// "net", "0", "-1", "12a" and numbers past pid_t.
std::optional<pid_t> parse_pid(std::string_view name);

/// The pids under `proc_root` (entries named by parse_pid), in directory order. Error: the
/// root cannot be listed ("/proc: cannot list: Permission denied").
Result<std::vector<pid_t>> list_pids(const std::string& proc_root = "/proc");

/// The children of `pid` as the kernel lists them per thread (<proc_root>/<pid>/task/<tid>/
/// children, CONFIG_PROC_CHILDREN, Linux 3.5+; a child belongs to the thread that forked it,
/// an adopted orphan to any thread of the subreaper), appended to `out`. Nothing for a
/// process that is gone or a kernel without the lists (has_children_lists tells which).
void list_children(pid_t pid, std::vector<pid_t>& out, const std::string& proc_root = "/proc");

/// Whether this kernel lists children under `proc_root`: `pid`'s main thread has the file.
bool has_children_lists(pid_t pid, const std::string& proc_root = "/proc");

/// The fields of a /proc/PID/stat text after the process's name, which may hold spaces and
/// parentheses and so ends at the text's last ')': proc(5)'s fields from the third on, so [0]
/// is the state, [1] the parent's pid, [2] the process group, [11] and [12] the user and
/// system ticks, [17] the threads, [19] the start time, [21] the resident pages. Empty when
/// the text has no name. The views point into `text`.
std::vector<std::string_view> stat_fields(std::string_view text);

/// The initial environment of `pid`: <proc_root>/<pid>/environ as entries. Error: one line
/// naming the file ("/proc/42/environ: cannot read: Permission denied").
Result<std::vector<std::string>> read_environ(pid_t pid, const std::string& proc_root = "/proc");

/// Calls `visit(pid, entries)` for every process under `proc_root` whose environment can be
/// read, in directory order, until `visit` returns false. Processes that cannot be read
/// (another user's, gone since the listing) are skipped; an unlistable root visits none.
void for_each_environ(const std::string& proc_root,
                      const std::function<bool(pid_t, const std::vector<std::string>&)>& visit);

}  // namespace ferry
