#include "ferry/frontend/host_spec.hpp"

#include <algorithm>
#include <cstdio>
#include <random>

#include "ferry/plan/arg_placeholders.hpp"
#include "ferry/plan/environment.hpp"
#include "ferry/rendezvous/framework_env.hpp"

namespace ferry {

std::string new_job_id() {
  std::random_device rd;
  std::uniform_int_distribution<uint64_t> d;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(d(rd)));
  return buf;
}

const std::vector<int>& devices_for_host(const JobOptions& opts, const HostEntry& host) {
  for (const auto& hd : opts.host_devices)
    if (hd.name == host.name && hd.user == host.user && hd.port == host.port) return hd.devices;
  return opts.binding.devices;
}

namespace {

// The value of `name` in "K=V" entries, the last one winning.
std::string env_value(const std::vector<std::string>& env, std::string_view name) {
  std::string out;
  for (const auto& kv : env)
    if (kv.size() > name.size() && kv.starts_with(name) && kv[name.size()] == '=')
      out = kv.substr(name.size() + 1);
  return out;
}

}  // namespace

Result<Placement> place_job(const JobOptions& opts) {
  if (opts.rank_file)
    return place_by_rank_file(*opts.rank_file, opts.hosts, opts.np, opts.oversubscribe);
  if (opts.apps.size() > 1)
    return place_apps(opts.hosts, opts.apps, opts.oversubscribe, opts.placement);
  return place_ranks(opts.hosts, opts.np, opts.oversubscribe, opts.placement);
}

wire::RankLaunch rank_launch(const JobOptions& opts, const Placement& placement,
                             const HostPlan& plan, const RankSlot& r,
                             const std::vector<std::string>& job_env) {
  wire::RankLaunch rl;
  rl.rank = r.rank;
  rl.env = rank_environment(placement, plan, r);
  const std::vector<std::string>* command = &opts.command;
  if (opts.apps.size() > 1 && r.app >= 0 && static_cast<size_t>(r.app) < opts.apps.size()) {
    // An MPMD rank: its part's command, directory and variables (the job's, then the part's,
    // then the rank's own, which always win).
    const AppSpec& app = opts.apps[static_cast<size_t>(r.app)];
    command = &app.command;
    rl.argv = app.command;
    if (opts.expand_args && !rl.argv.empty()) rl.argv.resize(1);
    rl.wdir = app.wdir;
    rl.app = static_cast<uint32_t>(r.app);
    rl.env.insert(rl.env.begin(), app.exports.begin(), app.exports.end());
  }
  if (opts.expand_args) {
    const PlaceholderValues v{r.rank,
                              r.local_rank,
                              r.node_rank,
                              placement.world_size,
                              env_value(job_env, "MASTER_ADDR"),
                              env_value(job_env, "MASTER_PORT")};
    for (size_t i = 1; i < command->size(); ++i)
      rl.extra_args.push_back(expand_placeholders((*command)[i], v));
  }
  if (opts.torch_local_rank_arg)
    rl.extra_args =
        with_local_rank_arg(std::move(rl.extra_args), r.local_rank,
                            opts.torch_local_rank_underscore ? LocalRankArgStyle::kUnderscore
                                                             : LocalRankArgStyle::kDash);
  return rl;
}

wire::HostSpec make_host_spec(const JobOptions& opts, const Placement& placement,
                              const HostInputs& host, const SharedSpec& shared) {
  const HostPlan& plan = *host.plan;
  wire::HostSpec spec;
  spec.job_id = shared.job_id;
  spec.wdir = opts.wdir;
  // The default wdir is this machine's; a remote host may lack it. A local host cannot.
  spec.wdir_fallback = !opts.wdir_explicit && !host.local;
  // --sync: the ranks start in the host's copy of the tree (ferryd takes a relative --wdir
  // inside it).
  if ((opts.sync || opts.sync_request) && !opts.wdir_explicit) {
    spec.wdir.clear();
    spec.wdir_fallback = false;
  }
  spec.argv = opts.command;
  // Each rank's arguments are its own (rank_launch): the program alone is shared.
  if (opts.expand_args && !spec.argv.empty()) spec.argv.resize(1);
  spec.env = shared.env;
  spec.env.insert(spec.env.end(), host.env.begin(), host.env.end());
  for (const auto& r : plan.ranks)
    spec.ranks.push_back(rank_launch(opts, placement, plan, r, spec.env));
  const bool has_stdin_rank = std::any_of(plan.ranks.begin(), plan.ranks.end(),
                                          [&](auto& r) { return r.rank == opts.stdin_rank; });
  // Stdin is read once: a later attempt's ranks get /dev/null.
  spec.stdin_rank =
      opts.stdin_rank >= 0 && has_stdin_rank && shared.attempt == 0 ? opts.stdin_rank : -1;
  spec.kill_grace_ms = static_cast<uint32_t>(opts.kill_grace_s * 1000);
  spec.verbose = opts.verbose;
  spec.heartbeat_ms = static_cast<uint32_t>(opts.heartbeat_s) * 1000;
  spec.sample_ms = opts.watching() ? static_cast<uint32_t>(opts.sample_ms) : 0;
  spec.secret = shared.secret;
  spec.pmi = !opts.no_pmi;
  spec.world_size = placement.world_size;
  spec.universe_size = universe_size(placement);
  spec.pmi_process_mapping = shared.pmi_process_mapping;
  spec.node_names = shared.node_names;
  spec.node_index = host.index;
  spec.node_of_rank = shared.node_of_rank;
  spec.binding = opts.binding;
  spec.binding.devices = devices_for_host(opts, plan.host);
  if (opts.rank_file)
    for (const RankSlot& r : plan.ranks) {
      const RankFileEntry* e = opts.rank_file->find(r.rank);
      spec.binding.rank_slots.push_back(e ? e->slots : std::string());
    }
  spec.attempt = shared.attempt;
  spec.keep_serving = shared.restartable;
  spec.error_files = shared.restartable;
  spec.horovod = opts.horovod;
  spec.path_prepends = opts.path_prepends;
  for (int n : placement.app_sizes) spec.app_sizes.push_back(static_cast<uint32_t>(n));
  return spec;
}

}  // namespace ferry
