// ferryrun's options for what the console shows (--console-ranks, --fold, the host tag),
// the job summary, per-rank arguments and where exported variables come from.

#include <unistd.h>

#include <algorithm>
#include <string_view>

#include "cli_parts.hpp"
#include "ferry/cli/rank_list.hpp"
#include "ferry/plan/arg_placeholders.hpp"
#include "ferry/plan/env_sources.hpp"
#include "option_checks.hpp"

namespace ferry::cli_detail {

void add_console_options(CLI::App& app, FrontendConfig& cfg, RawCli& raw) {
  app.add_option("--console-ranks", raw.console_ranks,
                 "Show only these ranks' output on the console (0,4-7); the others still go "
                 "to --output-filename files, and failures are reported")
      ->group("Output");
  app.add_flag("--fold", cfg.output.fold,
               "Print a line that many ranks print alike once, with their ranks "
               "([0-63]<stdout>:), after a short wait for the others")
      ->group("Output");
  app.add_flag("--summary", raw.summary,
               "After the job, a table of wall time, CPU time, peak RSS and exit per host "
               "(--summary=ranks: per rank); always printed after a failure")
      ->group("Output");
  app.add_flag("--expand-args", cfg.job.expand_args,
               "Replace {rank}, {local_rank}, {node_rank}, {world_size}, {master_addr} and "
               "{master_port} in the command's arguments per rank ({{ and }}: braces)")
      ->group("Job");
  app.add_option("--env-file", raw.env_files,
                 "Export the KEY=VALUE lines of FILE to every rank (# comments; KEY alone: "
                 "from this environment)")
      ->allow_extra_args(false)
      ->group("Job");
  app.add_flag("--env-all", raw.env_all,
               "Export this whole environment but its session variables (HOME, USER, SSH_*, "
               "...), as horovodrun does; -x and --env-file win")
      ->group("Job");
}

Status finish_console(FrontendConfig& cfg, RawCli& raw) {
  if (!raw.console_ranks.empty()) {
    auto ranks = parse_rank_list(raw.console_ranks);
    if (!ranks) return make_error("--console-ranks: " + ranks.error().message);
    cfg.output.console_ranks = std::move(*ranks);
  }
  // A flag takes its word after '=' only: `--summary ranks` would run a command "ranks".
  const auto& cmd = cfg.job.command;
  if (!raw.summary.empty() && !cmd.empty() && (cmd.front() == "ranks" || cmd.front() == "hosts"))
    return make_error("--summary " + cmd.front() + ": write --summary=" + cmd.front() +
                      " (the next word starts the command)");
  // A bare flag reads "true".
  if (raw.summary == "true" || raw.summary == "hosts")
    cfg.job.summary = JobOptions::Summary::kHosts;
  else if (raw.summary == "ranks")
    cfg.job.summary = JobOptions::Summary::kRanks;
  else if (!raw.summary.empty())
    return make_error("--summary=" + raw.summary + ": expected --summary, --summary=hosts or " +
                      "--summary=ranks");
  if (raw.torch_arg == "underscore")
    cfg.job.torch_local_rank_underscore = true;
  else if (!raw.torch_arg.empty() && raw.torch_arg != "true" && raw.torch_arg != "dash")
    return make_error("--torch-local-rank-arg=" + raw.torch_arg +
                      ": expected --torch-local-rank-arg or --torch-local-rank-arg=underscore");
  if (!raw.torch_arg.empty()) cfg.job.torch_local_rank_arg = true;
  if (cfg.job.expand_args && !cmd.empty()) {
    if (cmd.front().find('{') != std::string::npos)
      return make_error("--expand-args: the program '" + cmd.front() +
                        "' holds a brace; placeholders go in its arguments");
    if (Status st = check_placeholders(std::vector<std::string>(cmd.begin() + 1, cmd.end())); !st)
      return st;
  }
  return {};
}

Result<std::vector<std::string>> export_items(RawCli& raw, const JobFileExtras& file,
                                              const std::vector<std::string>& generated) {
  std::vector<std::string> items;
  if (raw.env_all || file.env_all || raw.who == Personality::kHorovodrun)
    items = forwarded_environment(environ);
  // Open MPI's settings in this environment reach every rank, as mpirun forwards them.
  if (raw.who != Personality::kHorovodrun)
    for (char** e = environ; e && *e; ++e)
      if (std::string_view(*e).starts_with("OMPI_MCA_")) items.emplace_back(*e);
  items.insert(items.end(), file.exports.begin(), file.exports.end());
  std::vector<std::string> files = file.env_files;
  files.insert(files.end(), raw.env_files.begin(), raw.env_files.end());
  for (const auto& path : files) {
    auto vars = read_env_file(path);
    if (!vars) return make_error("--env-file " + vars.error().message);
    items.insert(items.end(), vars->begin(), vars->end());
  }
  items.insert(items.end(), generated.begin(), generated.end());
  items.insert(items.end(), raw.exports.begin(), raw.exports.end());
  return expand_export_patterns(items, environ, raw.warnings);
}

}  // namespace ferry::cli_detail
