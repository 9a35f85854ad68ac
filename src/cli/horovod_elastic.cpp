// horovodrun's elastic flags: --host-discovery-script, or --min-np with fixed hosts, turns on
// Horovod's elastic driver in ferry (the job's rounds are the front end's; see docs/compat.md).
// Here: the flags and their checks. The discovery script first runs when the job starts
// (frontend/elastic_discovery.hpp): the command line only says which hosts are to be found.

#include <algorithm>
#include <cstdlib>

#include "cli_parts.hpp"
#include "cli_text.hpp"
#include "ferry/common/text.hpp"
#include "option_checks.hpp"

namespace ferry::cli_detail {

void add_elastic_options(CLI::App& app, FrontendConfig& cfg, RawCli& raw) {
  ElasticOptions& e = cfg.job.elastic;
  app.add_option("--host-discovery-script", e.discovery_script,
                 "Elastic mode: a script printing the available hosts, one 'host' or "
                 "'host:slots' a line; run every second")
      ->group("Elastic");
  app.add_option("--slots-per-host", e.slots_per_host,
                 "Slots of a discovered host whose line gives none (default 1)")
      ->transform(whole_number(1, 1'000'000))
      ->group("Elastic");
  app.add_option("--elastic-timeout", raw.elastic_timeout,
                 "Seconds to wait for enough slots (default 600, or $HOROVOD_ELASTIC_TIMEOUT)")
      ->transform(whole_number(1, 7 * 86'400LL))
      ->group("Elastic");
  app.add_option("--reset-limit", e.reset_limit,
                 "Most resets (workers removed or added) before the job is stopped")
      ->transform(whole_number(0, 1'000'000))
      ->group("Elastic");
  app.add_option("--blacklist-cooldown-range", raw.cooldown,
                 "LOW HIGH: seconds a failing host stays blacklisted (grows from LOW to HIGH); "
                 "default: for good")
      ->expected(2)
      ->allow_extra_args(false)  // exactly two: the command follows
      ->group("Elastic");
}

Status finish_horovod_elastic(FrontendConfig& cfg, RawCli& raw) {
  JobOptions& job = cfg.job;
  ElasticOptions& e = job.elastic;
  // horovod's launch.py: a discovery script or --min-np makes the run elastic; without a script,
  // over the fixed -H/--hostfile hosts (checked once they are read: finish_fixed_elastic).
  e.fixed_hosts = e.discovery_script.empty() && job.min_ranks > 0;
  if (!e.on()) {
    const char* needs = e.reset_limit >= 0        ? "--reset-limit"
                        : raw.elastic_timeout > 0 ? "--elastic-timeout"
                        : !raw.cooldown.empty()   ? "--blacklist-cooldown-range"
                        : e.slots_per_host != 1   ? "--slots-per-host"
                                                  : nullptr;
    if (needs)
      return make_error(std::string(needs) +
                        " belongs to the elastic mode: give --host-discovery-script, or "
                        "--min-np with -H/--hostfile");
    return {};
  }
  if (!e.fixed_hosts && (!raw.host_options.empty() || !raw.hostfiles.empty()))
    return make_error(
        "--host-discovery-script finds the hosts: give it or -H/--hostfile, not both");
  if (!raw.cooldown.empty()) {
    const int lo = raw.cooldown[0], hi = raw.cooldown[1];
    if (lo < 1 || hi > 3600 || lo > hi)
      return make_error("--blacklist-cooldown-range " + std::to_string(lo) + " " +
                        std::to_string(hi) + ": expected 1 <= LOW <= HIGH <= 3600 seconds");
    e.cooldown_low_s = lo;
    e.cooldown_high_s = hi;
  }
  e.timeout_s = raw.elastic_timeout;
  if (e.timeout_s == 0) {
    const char* env = std::getenv("HOROVOD_ELASTIC_TIMEOUT");
    auto v = env ? parse_int(env, 1, 86400LL * 7) : std::nullopt;
    e.timeout_s = v ? static_cast<int>(*v) : 600;
  }
  e.min_np = job.min_ranks > 0 ? job.min_ranks : job.np > 0 ? job.np : 1;
  e.max_np = raw.max_np;
  job.min_ranks = 0;  // the elastic driver, not the restart policy, goes on without hosts
  if (e.max_np > 0 && e.min_np > e.max_np)
    return make_error("--min-np " + std::to_string(e.min_np) + " is above --max-np " +
                      std::to_string(e.max_np));
  if (job.np > 0 && e.min_np > job.np)
    return make_error("--min-np " + std::to_string(e.min_np) + " is above -np " +
                      std::to_string(job.np));
  // The discovery script's first listing gives the hosts and -np: the elastic driver's, when
  // the job starts (discover_first_hosts).
  return {};
}

Status finish_fixed_elastic(JobOptions& job, RawCli& raw) {
  const ElasticOptions& e = job.elastic;
  if (!e.fixed_hosts) return {};
  const int n = static_cast<int>(job.hosts.size());
  if (n < 2)
    return make_error(
        "--min-np without --host-discovery-script is Horovod's elastic mode over "
        "the -H/--hostfile hosts, which needs at least 2 hosts; the job has " +
        std::to_string(n) + " (" + job.hosts.front().name + ")");
  int slots = 0;
  for (const auto& h : job.hosts) slots += h.slots;
  const int need = std::max(job.np, e.min_np);
  if (slots < need)
    return make_error("elastic: the hosts have " + std::to_string(slots) + " slots, fewer than " +
                      std::to_string(need) + " (-np, --min-np)");
  // As with a discovery script: a worker on every slot, up to --max-np.
  job.np = e.max_np > 0 ? std::min(slots, e.max_np) : slots;
  raw.notes.push_back("elastic over the fixed hosts: " + std::to_string(job.np) + " workers on " +
                      std::to_string(n) + " hosts, at least " + std::to_string(e.min_np) +
                      " (--min-np)");
  return {};
}

}  // namespace ferry::cli_detail
