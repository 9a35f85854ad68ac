#pragma once
/// \file
/// ferryrun's command line (CLI11): options → a FrontendConfig.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ferry/frontend/job_options.hpp"
#include "ferry/output/console_output.hpp"

namespace ferry {

/// SSH settings from the command line (the transport turns them into its own options).
struct SshSettings {
  std::string config_file;    ///< --ssh-config; "" = ~/.ssh/config
  std::string identity_file;  ///< -i
  int port = 0;               ///< -p; 0 = ssh config / 22
  std::string user;           ///< -l / --ssh-user
  bool accept_new = false;    ///< --ssh-accept-new
};

/// Everything ferryrun was asked to do.
/// How ferryd is started on the hosts.
enum class LaunchWith {
  kSsh,    ///< one SSH session per host (a host on this machine is forked, no SSH)
  kSlurm,  ///< one srun step inside the Slurm allocation, for every host
  kLocal,  ///< every host's ferryd forked on this machine
};

struct FrontendConfig {
  JobOptions job;
  LaunchWith launch = LaunchWith::kSsh;  ///< resolved from --launcher (auto: see finish_config)
  std::string launch_reason;             ///< why, for --verbose
  /// --launcher auto: `launch` follows the hosts (choose_launcher_by_hosts).
  bool launch_by_hosts = false;
  SshSettings ssh;
  /// --ship-ferryd: "auto", "always" or "never" (checked by the parser).
  std::string ship_ferryd = "auto";
  /// --ferryd-dir: a folder of ferryd-<arch> files to ship; "" = only this machine's.
  std::string ferryd_dir;
  OutputOptions output;
  /// The name the user called ("ferryrun", "horovodrun", "mpirun"), for messages.
  std::string program = "ferryrun";
  /// --detach: the job goes on without the terminal; --nohup: it survives the terminal's
  /// hangup. Either keeps its console in a journal of at most `journal_max` bytes.
  bool detach = false;
  bool nohup = false;
  uint64_t journal_max = uint64_t{256} << 20;
  /// --pool NAME: the warm pool the job goes through ("" = the one serving the most of its
  /// hosts, if any runs); --no-pool: none.
  std::string pool;
  bool no_pool = false;
  /// The command line as the user typed it (one line), for the job's record.
  std::string command_line;
};

/// Outcome of parsing: a config to run, or an exit status (help/version printed: 0; bad
/// input reported in one line: 2).
struct ParseOutcome {
  std::optional<FrontendConfig> config;
  int exit_code = 0;
};

/// Parses ferryrun's arguments; args[0] is argv[0]. Its base name picks the personality
/// (`horovodrun`, `mpirun`/`mpiexec`: their flags, see personality.hpp), as does a first
/// argument `--compat NAME`. `--config job.toml` supplies defaults that the command line
/// overrides. Hosts come from -H/--hostfile, else the job file, else a Slurm allocation
/// (SLURM_JOB_NODELIST), else this machine. Messages go to stderr (errors, one line, prefixed
/// with the program name) or stdout (--help, --version); never throws.
ParseOutcome parse_ferryrun_args(const std::vector<std::string>& args);

/// --launcher auto: Slurm inside an allocation whose nodes are all the job's hosts (hydra's
/// `-launcher slurm` and Open MPI's plm_slurm do the same), else SSH. parse_ferryrun_args
/// calls it; a job whose hosts a discovery script finds calls it once they are found.
void choose_launcher_by_hosts(FrontendConfig& cfg);

/// Rewrites mpirun-style single-dash long options (`-np 4`, `-wdir D`, `-hostfile F`) to
/// their double-dash form, up to the first word of the command. Exposed for tests.
std::vector<std::string> normalize_single_dash(const std::vector<std::string>& args,
                                               const std::vector<std::string>& long_names,
                                               const std::vector<std::string>& takes_value);

}  // namespace ferry
