#pragma once
/// \file
/// The TOML job file (`--config job.toml`): hosts with per-host SSH port, user, slots and
/// devices, host defaults, environment, binding and output options. Schema and example:
/// docs/job-file.md and examples/job.toml. Values here are defaults for the command line:
/// any option given there wins.

#include <string>
#include <vector>

#include "ferry/cli/ferryrun_cli.hpp"
#include "ferry/common/result.hpp"
#include "ferry/mpmd/app_line.hpp"

namespace ferry {

/// What a job file says, applied over a base configuration.
struct JobFile {
  /// The base given to the parser with the file's settings applied: np, command, wdir,
  /// timeouts, stdin, ssh, [defaults] port/user/ferryd (as -p/-l/--ferryd), [binding],
  /// [output], and the hosts of `hosts` (with host_devices) in config.job.
  FrontendConfig config;
  /// Hostfiles named by `hostfile`, relative paths made relative to the job file's folder;
  /// read by the caller after config.job.hosts.
  std::vector<std::string> hostfiles;
  /// [environment] as "K=V", then `export` items ("NAME" or "K=V") as `-x` takes them.
  std::vector<std::string> exports;
  /// [defaults] slots: slots of hosts that name none (here, in -H and in hostfiles).
  int default_slots = 1;
  /// `env_file`: env files (KEY=VALUE lines), relative paths made relative to the file's
  /// folder; `env_all`: export this whole environment (as --env-all).
  std::vector<std::string> env_files;
  bool env_all = false;
  /// [[apps]]: an MPMD job's parts, unresolved (the caller resolves them as the command
  /// line's parts).
  std::vector<AppPart> apps;
};

/// Parses job file text. `file` names it in errors ("job.toml:7: unknown key 'slot' in
/// [defaults] (known: ...)") and its folder anchors relative hostfile paths. Every error is
/// one line naming file:line and the bad key or value. A UTF-8 byte-order mark at the
/// start is skipped. Never throws.
Result<JobFile> parse_job_file_text(const std::string& text, const std::string& file,
                                    const FrontendConfig& base);

/// Reads and parses a job file ("job.toml: cannot read: No such file or directory"). A
/// `.yaml`/`.yml` file is refused with a pointer to the TOML format.
Result<JobFile> read_job_file(const std::string& path, const FrontendConfig& base);

}  // namespace ferry
