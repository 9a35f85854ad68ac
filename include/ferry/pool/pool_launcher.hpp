#pragma once
/// \file
/// ferryrun's way into a warm pool: a Launcher that asks the pool for a ferryd on each host
/// it serves (pool_server.hpp's `open`) and hands every other host, and any host the pool
/// cannot serve now, to the launcher the job would have used without it. The link it hands
/// out is the pool's connection: the job's frames go to that host's ferryd as they would
/// over SSH; its direct output route (connect-back) is offered as over SSH.

#include <asio/io_context.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ferry/common/result.hpp"
#include "ferry/transport/link.hpp"

namespace ferry {

/// The pool a job goes through, and how its hosts are named there.
struct PoolRoute {
  std::string name;
  std::string dir;
  std::set<std::string> keys;  ///< the hosts it serves (pool_dir.hpp's keys)
  int default_port = 0;        ///< the job's -p, for the keys of its hosts
  std::string default_user;    ///< the job's -l
};

/// The pool for a job whose hosts have `keys`: the one named `name` (error, one line, when
/// there is none of that name or it does not run), else the running pool that serves the
/// most of them (nullopt: none serves any).
Result<std::optional<PoolRoute>> find_pool(const std::string& pools_dir, const std::string& name,
                                           const std::vector<std::string>& keys);

class PoolLauncher : public Launcher {
 public:
  /// `fallback` reaches the hosts the pool does not serve; `verbose` gets a line per host
  /// saying how it was reached (may be empty). `label` names the job in the pool's log.
  PoolLauncher(asio::io_context& io, PoolRoute route, Launcher& fallback, std::string label,
               std::function<void(const std::string&)> verbose);
  ~PoolLauncher() override;
  PoolLauncher(const PoolLauncher&) = delete;
  PoolLauncher& operator=(const PoolLauncher&) = delete;

  void async_open(const HostEntry& host, const DaemonCommand& cmd, OpenHandler handler) override;
  void cancel_all() override;

 private:
  struct Pending;
  void fall_back(const HostEntry& host, const DaemonCommand& cmd, OpenHandler handler,
                 const std::string& why);

  asio::io_context& io_;
  PoolRoute route_;
  Launcher& fallback_;
  std::string label_;
  std::function<void(const std::string&)> verbose_;
  std::vector<std::weak_ptr<Pending>> pending_;
};

}  // namespace ferry
