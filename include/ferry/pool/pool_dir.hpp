#pragma once
/// \file
/// Where a user's warm pools live and how a job finds one. Each pool is a 0700 directory
/// `<state>/ferry/pools/NAME/` ($XDG_STATE_HOME, else ~/.local/state) holding its control
/// socket (`pool.sock`), the hosts it serves (`hosts`, one key a line, rewritten as they
/// come up) and its log (`pool.log`). A host is known to a pool by its key: the host's name
/// with the login user and SSH port the job would use (its entry's, else -l and -p), each
/// only where one was given (`node1`, `alice@node1:2222`), so a job reaches a pooled host
/// exactly when it would have asked SSH for the same destination.

#include <optional>
#include <string>
#include <vector>

#include "ferry/common/posix_handles.hpp"
#include "ferry/common/result.hpp"
#include "ferry/hosts/host_list.hpp"

namespace ferry {

inline constexpr const char* kPoolSocketName = "pool.sock";
inline constexpr const char* kPoolHostsName = "hosts";
inline constexpr const char* kPoolLogName = "pool.log";

/// The pools' directory (made private where missing). Error: one line naming it.
Result<std::string> pools_directory();
/// The pools' directory if it exists (nullopt: no pool was ever started here), checked as
/// pools_directory() checks it but never made: a job that only looks for a pool creates
/// nothing. Error: one line (another user's, or open to others).
Result<std::optional<std::string>> existing_pools_directory();
/// The same below `home` / `xdg_state_home` (tests).
Result<std::string> pools_directory(const std::string& home, const std::string& xdg_state_home);

/// A pool's name: letters, digits, '.', '-', '_' (1-64, not starting with '.'); error names it.
Status check_pool_name(const std::string& name);

/// A host's key in a pool (see above).
std::string pool_host_key(const HostEntry& host, int default_port, const std::string& default_user);

/// A pool as its directory describes it (it may be gone: only its socket tells).
struct PoolEntry {
  std::string name;
  std::string dir;
  std::vector<std::string> keys;  ///< the hosts it serves
};

/// Every pool directory under `pools_dir`, by name.
std::vector<PoolEntry> list_pools(const std::string& pools_dir);

/// Connects to the pool serving `dir` (blocking: a Unix socket answers at once). Error: one
/// line ("no pool answers at DIR/pool.sock").
Result<UniqueFd> connect_pool(const std::string& dir);

/// One request to the pool at `dir` answered by lines up to "end" (or one line starting
/// "ok"/"no"), for `ferry pools` and `ferry down`. Error: one line.
Result<std::vector<std::string>> pool_request(const std::string& dir, const std::string& request);

}  // namespace ferry
