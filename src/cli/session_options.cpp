// --detach, --nohup, --journal-max: a job that outlives its terminal (session part).

#include <unistd.h>

#include <string>

#include "cli_parts.hpp"
#include "cli_text.hpp"

namespace ferry::cli_detail {

void add_session_options(CLI::App& app, RawCli& raw) {
  app.add_flag("--detach", raw.detach,
               "Start the job, print its id once every rank runs, and return; the job goes on "
               "without this terminal (follow it with 'ferry attach ID')")
      ->group("Job");
  app.add_flag("--nohup", raw.nohup,
               "Keep the job running when this terminal goes away; its output then goes on "
               "into the journal ('ferry attach ID')")
      ->group("Job");
  app.add_option("--journal-max", raw.journal_max,
                 "Most bytes of output a detached job's journal keeps, the newest (default 256M)")
      ->group("Job");
}

Status finish_session(FrontendConfig& cfg, const RawCli& raw) {
  cfg.detach = raw.detach;
  cfg.nohup = raw.nohup && !raw.detach;
  if (raw.journal_max) {
    auto size = parse_size(*raw.journal_max);
    if (!size || *size < (uint64_t{64} << 10))
      return make_error("--journal-max: bad size '" + *raw.journal_max +
                        "' (expected bytes, or a number with K, M or G; at least 64K)");
    cfg.journal_max = *size;
  }
  if (cfg.job.top) {
    if (raw.detach) return make_error("--top shows the job on this terminal; --detach leaves it");
    if (::isatty(0) == 0 || ::isatty(1) == 0)
      return make_error("--top needs a terminal: stdin and stdout must be one");
    cfg.job.stdin_rank = -1;  // the keys are the view's
  }
  if (!raw.detach && !raw.nohup) return {};
  if (raw.detach && !raw.stdin_spec.empty() && raw.stdin_spec != "none")
    return make_error("--detach and --stdin " + raw.stdin_spec +
                      ": a detached job has no terminal to read from");
  if (raw.detach) cfg.job.stdin_rank = -1;
  cfg.job.ignore_hangup = true;
  return {};
}

}  // namespace ferry::cli_detail
