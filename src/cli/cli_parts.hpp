#pragma once
/// \file
/// Private to src/cli/: the pieces parse_ferryrun_args assembles. Each personality adds its
/// options to a CLI11 app, binding them to a FrontendConfig (values that mean something on
/// their own) or to RawCli (values that need the whole command line, the job file or the
/// environment before they mean something); finish_config then builds the final config.

#include <CLI/CLI.hpp>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ferry/cli/ferryrun_cli.hpp"
#include "ferry/cli/personality.hpp"
#include "ferry/hosts/host_list.hpp"
#include "ferry/mpmd/app_line.hpp"

namespace ferry::cli_detail {

/// Option values kept raw until the whole command line is read.
struct RawCli {
  Personality who = Personality::kFerryrun;
  std::string program = "ferryrun";                      ///< for messages
  std::vector<std::string> host_options;                 ///< -H values, in order
  std::vector<std::string> hostfiles;                    ///< --hostfile
  std::vector<std::string> exports;                      ///< -x
  std::string config_file;                               ///< --config
  std::string compat;                                    ///< --compat seen after the first argument
  std::string tag;                                       ///< --tag-style word ("" = unchanged)
  std::string layout;                                    ///< --output-layout word ("" = unchanged)
  bool tag_output = false;                               ///< mpirun --tag-output
  std::string stdin_spec;                                ///< --stdin word ("" = unchanged)
  bool stdin_none = false;                               ///< --stdin-none
  bool no_preflight = false;                             ///< --no-preflight
  std::string bind_to, map_by, rank_by;                  ///< binding words ("" = unchanged)
  int per_node = 0;                                      ///< -N
  std::string devices;                                   ///< --devices list
  int default_slots = 0;                                 ///< --default-slots (0 = unchanged)
  std::string prefix;                                    ///< mpirun --prefix
  std::vector<std::pair<std::string, std::string>> mca;  ///< --mca key value
  std::vector<std::string> mca_help;           ///< never filled: take_mca removes --mca first
  std::string ferryd;                          ///< --ferryd (or PREFIX/bin/ferryd); "" = unchanged
  std::string ship_ferryd;                     ///< --ship-ferryd; "" = the job file's or auto
  std::string ferryd_dir;                      ///< --ferryd-dir; "" = the job file's
  std::vector<std::string> nics;               ///< horovodrun --network-interface(s)
  std::map<std::string, std::string> horovod;  ///< horovodrun tunables: flag → value
  std::vector<std::string> refused;            ///< flags given that ferry refuses, in order
  /// Flags the scan gave a second dash, as the user wrote them ("--bynode" → "-bynode").
  std::map<std::string, std::string> typed;
  bool mpi_controller = false;         ///< horovodrun --mpi
  bool accepted = false;               ///< flags accepted with no effect
  std::vector<std::string> notes;      ///< said under --verbose
  std::vector<std::string> warnings;   ///< said always
  std::string nnodes;                  ///< --nnodes N or MIN:MAX ("" = not given)
  std::string launcher = "auto";       ///< --launcher (mpirun: --mca plm, -launcher)
  int max_np = 0;                      ///< horovodrun --max-np (0 = not given)
  std::vector<int> cooldown;           ///< horovodrun --blacklist-cooldown-range
  int elastic_timeout = 0;             ///< horovodrun --elastic-timeout (0 = not given)
  std::string console_ranks;           ///< --console-ranks list ("" = not given)
  std::string summary;                 ///< --summary word ("" = not given)
  std::string torch_arg;               ///< --torch-local-rank-arg word ("" = not given)
  std::vector<std::string> env_files;  ///< --env-file, in order
  bool env_all = false;                ///< --env-all
  // mpirun's older spellings, kept as given until the whole line is read: (flag, word).
  std::vector<std::pair<std::string, std::string>> map_aliases;   ///< --bynode, --ppr N:node
  std::vector<std::pair<std::string, std::string>> bind_aliases;  ///< --bind-to-core
  bool pernode = false;                                           ///< mpirun --pernode (-N 1)
  bool no_oversubscribe = false;                                  ///< mpirun --nooversubscribe
  bool use_hwthreads = false;                                     ///< mpirun --use-hwthread-cpus
  bool display_allocation = false;                                ///< mpirun --display-allocation
  std::string default_hostfile;                                   ///< mpirun --default-hostfile
  std::string app_file;                    ///< mpirun --app FILE (one MPMD part a line)
  std::string parts_file;                  ///< mpiexec -configfile FILE (the same, hydra's name)
  std::string rankfile;                    ///< mpirun --rankfile FILE
  bool detach = false;                     ///< --detach
  bool nohup = false;                      ///< --nohup
  std::optional<std::string> journal_max;  ///< --journal-max SIZE
  std::vector<std::string> sync;           ///< --sync DIR[:DEST], in order
  std::vector<std::string> sync_exclude;   ///< --sync-exclude PATTERN
  std::optional<std::string> sync_max;     ///< --sync-max SIZE
  bool preload_binary = false;             ///< mpirun -s/--preload-binary
  std::string preload_files;               ///< mpirun --preload-files A,B
};

/// A flag another launcher has and ferry cannot honour, with the reason given to the user.
struct Refusal {
  const char* names;  ///< CLI11 spelling ("--rankfile,--rf")
  int values;         ///< values the flag takes
  const char* why;    ///< the rest of the one-line error
};

/// A flag another launcher has that changes nothing under ferry, with what --verbose says.
struct NoEffect {
  const char* names;
  int values;
  const char* note;
};

/// Adds `refusals` to `app`, in help group `group` ("" hides them): using one records its
/// first name in RawCli::refused, and first_refusal() turns that into the error.
void add_refusals(CLI::App& app, RawCli& raw, std::span<const Refusal> refusals,
                  const std::string& group);
/// "FLAG: why" for the first refused flag used; ok when none was.
Status first_refusal(const RawCli& raw, std::span<const Refusal> refusals);
/// Adds flags accepted with no effect (hidden from --help); each one used adds its note to
/// RawCli::notes ("FLAG: note").
void add_no_effect(CLI::App& app, RawCli& raw, std::span<const NoEffect> flags);

/// `flag` ("--bynode") as the user wrote it ("-bynode"), for messages.
std::string typed_as(const RawCli& raw, const std::string& flag);

/// How the user calls this command line, for the usage line and "see ... --help" hints:
/// the program, followed by "--compat NAME" when ferryrun speaks another launcher's line.
std::string invocation(const RawCli& raw);

/// Option names of an app for normalizing: long names (no dashes) and how many values
/// each spelling ("--np", "-H") takes.
struct OptionTable {
  std::vector<std::string> long_names;
  std::map<std::string, int> values;
  std::vector<std::string> short_flags;    ///< "-h", "-v": short options that take no value
  std::vector<std::string> number_shorts;  ///< "-n", "-c", "-N": short options taking a number
};

/// The table of `app`'s options.
OptionTable option_table(const CLI::App& app);

/// mpirun-style single-dash long options rewritten to double-dash, as normalize_single_dash,
/// with multi-value options (`--mca k v`) taking all their values.
std::vector<std::string> normalize(const std::vector<std::string>& args, const OptionTable& t);

/// The first word before `end` that CLI11 would split into short flags ("-hostfilee" into
/// -h and the rest, printing --help): a single-dash word of 3 characters or more, not a long
/// option, whose first letter is a short flag. Also a word CLI11 would read as a short option
/// that takes a number with a value that cannot be one ("-ckpointlib" as -c "kpointlib": the
/// error would be about -np). "" when there is none.
std::string first_flag_cluster(const std::vector<std::string>& args, size_t end,
                               const OptionTable& t);

/// Records in raw.typed the options of `args` that `normalized` (normalize's result for
/// them, word for word) wrote with a second dash.
void note_typed(const std::vector<std::string>& args, const std::vector<std::string>& normalized,
                RawCli& raw);
/// Index of the first word of the command in normalized `args` (or of "--"; args.size()
/// when there is none).
size_t command_start(const std::vector<std::string>& args, const OptionTable& t);

/// Removes `--mca KEY VALUE` triples before `end` from `args`, into `raw.mca`; `end` moves
/// back accordingly. Fails when a --mca lacks its two values.
Status take_mca(std::vector<std::string>& args, size_t& end, RawCli& raw);

/// Adds ferryrun's own options.
void add_ferryrun_options(CLI::App& app, FrontendConfig& cfg, RawCli& raw);
/// Adds horovodrun's options (and ferry's extras that do not clash with them).
void add_horovodrun_options(CLI::App& app, FrontendConfig& cfg, RawCli& raw);
/// Adds mpirun's options (and ferry's extras that do not clash with them).
void add_mpirun_options(CLI::App& app, FrontendConfig& cfg, RawCli& raw);

/// MPICH mpiexec's (hydra's) flags, added to mpirun's: -f, -hosts, -ppn, -genv, -env,
/// -genvlist, -genvall, -iface, -l, the ones accepted with no effect and the ones refused.
void add_hydra_options(CLI::App& app, FrontendConfig& cfg, RawCli& raw);
/// The first refused hydra flag used, as the error; ok when none.
Status finish_hydra(const RawCli& raw);
/// The first flag used that the personality refuses ("--check-build: why"), as the error; ok
/// when none. Checked before anything else, so that a refused flag given alone (horovodrun
/// --check-build) gets its reason, not "no command given".
Status personality_refusal(const RawCli& raw);

/// Options every personality has: --config, --ssh-config, --ssh-accept-new, --heartbeat,
/// --kill-grace, --ferryd, --stdin-none, and the device options of the binding part.
void add_shared_options(CLI::App& app, FrontendConfig& cfg, RawCli& raw);
/// --bind-to, --map-by, --rank-by, -N, --report-bindings, --cpus-per-rank (ferryrun, mpirun).
void add_placement_options(CLI::App& app, FrontendConfig& cfg, RawCli& raw, bool short_n);

/// Horovod tunables as HOROVOD_* variables ("K=V"), from RawCli::horovod (flag name without
/// dashes → value; on/off flags hold "1"/"0"). Checks values as horovodrun does; errors
/// name the flag. Sub-flags that need --autotune / --timeline-filename without it produce a
/// warning.
Result<std::vector<std::string>> horovod_tunables_env(
    const std::map<std::string, std::string>& flags, std::vector<std::string>& warnings);

/// The launcher's environment as horovodrun forwards it ("K=V"), minus variables that
/// describe this login session rather than the job (HOME, USER, PWD, SSH_*, ...),
/// BASH_FUNC_*, *CUDA_VISIBLE_DEVICES (as horovodrun), and names that are not identifiers.
std::vector<std::string> forwarded_environment(char** environ_list);

/// ferryrun's console, environment and summary options (console_options.cpp): --console-ranks,
/// --fold, --summary, --expand-args, --env-file, --env-all.
void add_console_options(CLI::App& app, FrontendConfig& cfg, RawCli& raw);

/// What the job file adds that FrontendConfig does not hold.
struct JobFileExtras {
  bool present = false;
  std::vector<std::string> hostfiles;
  std::vector<std::string> exports;
  std::vector<std::string> env_files;  ///< env_file, relative paths made the file's
  bool env_all = false;
  int default_slots = 1;
  std::vector<AppPart> apps;  ///< [[apps]]
};

/// The console, summary and argument words once the line is read (console_options.cpp).
Status finish_console(FrontendConfig& cfg, RawCli& raw);

/// The exported items in the order they override each other: --env-all's environment, the
/// job file's, the env files', `generated`, then -x; patterns expanded (env_sources.hpp).
Result<std::vector<std::string>> export_items(RawCli& raw, const JobFileExtras& file,
                                              const std::vector<std::string>& generated);

/// horovodrun's part of finishing (its refused flags were checked first, personality_refusal):
/// returns the tunables and NICs as "K=V" exports.
Result<std::vector<std::string>> finish_horovodrun(FrontendConfig& cfg, RawCli& raw);
/// The first refused horovodrun flag used, as the error (personality_refusal).
Status horovodrun_refusal(const RawCli& raw);

/// horovodrun's elastic flags (horovod_elastic.cpp), and their checks once the line is read:
/// with --host-discovery-script, the first discovery gives the job its hosts (waiting up to
/// --elastic-timeout for -np slots).
void add_elastic_options(CLI::App& app, FrontendConfig& cfg, RawCli& raw);
Status finish_horovod_elastic(FrontendConfig& cfg, RawCli& raw);
/// horovodrun --min-np without a discovery script, once the hosts are read: at least 2 of them
/// (as horovod's FixedHosts wants), a worker on every slot up to --max-np.
Status finish_fixed_elastic(JobOptions& job, RawCli& raw);

/// mpirun's part of finishing: --mca plm_rsh_args into the SSH settings, other --mca noted,
/// --prefix into the ranks' PATH and LD_LIBRARY_PATH (and ferryd's path where it has one).
Status finish_mpirun(FrontendConfig& cfg, RawCli& raw);
/// The first refused mpirun or hydra flag used, as the error (personality_refusal).
Status mpirun_refusal(const RawCli& raw);

/// An MPMD job's parts as given (mpmd_options.cpp): the command cut at ':' words, or the
/// parts of --app / -configfile (then the command line has no command; the first part's
/// becomes job.command). Nothing when the job runs one program. `literal`: the command came
/// after `--`, where ':' is a plain word.
Result<std::vector<AppPart>> take_mpmd_parts(FrontendConfig& cfg, const RawCli& raw, bool literal,
                                             const JobFileExtras& extras, bool& from_file);
/// The MPMD files of both families, Open MPI's --app and hydra's -configfile (mpmd_options.cpp).
void add_mpmd_options(CLI::App& app, RawCli& raw);
/// Once the job's hosts are known: each part's hosts (added to the job's when new), its
/// exports resolved, its directory; job.apps. Refuses what an MPMD job cannot combine with.
Status finish_mpmd(JobOptions& job, RawCli& raw, const std::vector<AppPart>& parts,
                   int default_slots, bool from_file);
/// --rankfile once the job's hosts are known: the file read and placed (so that a bad line
/// is refused here), its hosts the job's when none were given, -np the file's ranks when not
/// given; job.rank_file. Refuses what places ranks otherwise (-N, --map-by, --rank-by,
/// --cpus-per-rank, MPMD parts, elastic mode).
Status finish_rank_file(JobOptions& job, RawCli& raw);

/// --detach, --nohup and --journal-max (session_options.cpp).
void add_session_options(CLI::App& app, RawCli& raw);
/// Their values into `cfg`: the journal's bound, no stdin for a detached job (--stdin N is
/// refused: nothing would feed it).
Status finish_session(FrontendConfig& cfg, const RawCli& raw);

/// --sync, --sync-exclude and --sync-max (sync_options.cpp).
void add_sync_options(CLI::App& app, RawCli& raw);
/// mpirun's -s/--preload-binary and --preload-files (sync_options.cpp).
void add_preload_options(CLI::App& app, RawCli& raw);
/// The trees to read, as job.sync_request (the job reads them while its hosts are reached).
/// Refuses here, before any host is reached, what needs no walk: a DIR that is not a directory,
/// a bad DEST or --sync-max, a preloaded path that is not a file, and --sync in Horovod's
/// elastic mode.
Status finish_sync(JobOptions& job, const RawCli& raw);

/// Builds the final config once CLI11 has parsed: command, hosts (command line, job file,
/// Slurm, or this machine), exports, binding words, stdin, output, paths. `remaining` is
/// CLI11's leftover (the command). Errors are one line for the user (exit 2).
Status finish_config(FrontendConfig& cfg, RawCli& raw, std::vector<std::string> remaining,
                     bool explicit_separator, const JobFileExtras& file);

}  // namespace ferry::cli_detail
