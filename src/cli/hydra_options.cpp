// MPICH's mpiexec (hydra) flags in the mpirun personality: the links mpirun and mpiexec
// take an MPICH user's line as well as an Open MPI one (the two share no flag that means
// different things).

#include "cli_parts.hpp"
#include "cli_text.hpp"
#include "ferry/common/text.hpp"
#include "option_checks.hpp"

namespace ferry::cli_detail {
namespace {

const Refusal hydra_refusals[] = {
    {"--launcher-exec,--bootstrap-exec", 1,
     "ferry reaches hosts with its own SSH client (or srun inside Slurm)"},
    {"--membind", 1, "--bind-mem binds each rank's memory to its NUMA node(s)"},
    {"--info", 0, "ferryrun --version; ferryrun --check shows each host's MPI"},
    {"--prepend-pattern", 1, "ferry's tags are --tag-output, -prepend-rank or --tag-style"},
    {"--outfile-pattern,--errfile-pattern", 1,
     "--output-filename DIR writes each rank's stdout and stderr under DIR"},
    {"--nameserver", 1, "ferry runs no name server (no publish/lookup)"},
    {"--disable-auto-cleanup", 0, "ferry always ends every rank of a failed job"},
    {"--order-nodes", 1, "ranks go to hosts in the order given"},
    {"--skip-launch-node", 0,
     "leave this machine out of -f/-hosts instead: ferry runs ranks on every host given"},
};

const NoEffect hydra_no_effect[] = {
    {"--genvnone,--envnone", 0,
     "only -genv/-env/-x variables are exported under this personality anyway"},
    {"--rmk", 1, "ferry finds a Slurm allocation itself"},
    {"--topolib", 1, "ferry reads the topology with hwloc"},
    {"--demux", 1, "no effect under ferry"},
    {"--profile", 0, "no effect under ferry (--verbose times each step)"},
    {"--print-all-exitcodes", 0, "ferry's job summary gives every host's exit codes"},
    {"--disable-hostname-propagation", 0, "no effect under ferry"},
    {"--localhost", 1, "no effect under ferry"},
    {"--usize", 1, "the universe is the job's ranks"},
    {"--pmi-port", 0, "ferry serves PMI-1 over a socket of its own anyway"},
    {"--enable-x,--disable-x", 0, "no effect under ferry (no X forwarding)"},
    {"--silent-abort", 0, "no effect under ferry (a failed job is always reported)"},
};

}  // namespace

void add_hydra_options(CLI::App& app, FrontendConfig& cfg, RawCli& raw) {
  app.add_option("-f", raw.hostfiles, "Hostfile (MPICH: 'host:N' lines)")
      ->allow_extra_args(false)
      ->group("MPICH (hydra)");
  app.add_option("--hosts", raw.host_options, "Hosts as host[:N],... (-H)")
      ->allow_extra_args(false)
      ->group("MPICH (hydra)");
  add_mpmd_options(app, raw);
  app.add_option("--ppn", raw.per_node, "Processes per host (-N)")
      ->transform(whole_number(1, 1'000'000))
      ->group("MPICH (hydra)");
  app.add_option_function<std::vector<std::string>>(
         "--genv,--env",
         [&raw](const std::vector<std::string>& nv) {
           for (size_t i = 0; i + 1 < nv.size(); i += 2)
             raw.exports.push_back(nv[i] + "=" + nv[i + 1]);
         },
         "Export NAME=VALUE to the processes (-x NAME=VALUE)")
      ->expected(2)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false)
      ->group("MPICH (hydra)");
  app.add_option_function<std::vector<std::string>>(
         "--genvlist,--envlist",
         [&raw](const std::vector<std::string>& lists) {
           for (const auto& list : lists)
             for (const auto& name : split(list, ','))
               if (auto n = trim(name); !n.empty()) raw.exports.emplace_back(n);
         },
         "Export these variables of this environment (-x each)")
      ->allow_extra_args(false)
      ->group("MPICH (hydra)");
  app.add_flag("--genvall,--envall", raw.env_all,
               "Export this whole environment (hydra's default; here only on request)")
      ->group("MPICH (hydra)");
  app.add_option_function<std::string>(
         "--iface", [&cfg](const std::string& name) { cfg.job.network_interfaces = {"=" + name}; },
         "Network interface for MPI, NCCL, gloo and MASTER_ADDR (exactly this name)")
      ->group("MPICH (hydra)");
  app.add_flag_function(
         "-l,--prepend-rank", [&raw](std::int64_t) { raw.tag = "mpich"; },
         "Tag each line with '[rank] '")
      ->group("MPICH (hydra)");
  app.add_option("--bootstrap", raw.launcher, "hydra's older name of -launcher")->group("");
  app.add_flag("--print-rank-map", cfg.job.binding.report_bindings,
               "Print each rank's host, cores and devices before the ranks start (--display-map)")
      ->group("MPICH (hydra)");
  app.add_flag_function(
         "--rr", [&raw](std::int64_t) { raw.map_by = "node"; },
         "Ranks round-robin over the hosts (--map-by node)")
      ->group("MPICH (hydra)");
  app.add_option_function<std::string>(
         "--gpus-per-proc",
         [&cfg](const std::string& v) {
           if (auto n = parse_int(v, 0, 1'000'000))
             cfg.job.binding.devices_per_rank = static_cast<int>(*n);
         },
         "Accelerators per process (--devices-per-rank; auto: ferry's default)")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            if (v == "auto" || parse_int(v, 0, 1'000'000)) return "";
            return "'" + v + "' is neither a whole number nor auto";
          },
          "N|auto"))
      ->group("MPICH (hydra)");
  add_refusals(app, raw, hydra_refusals, "");
  add_no_effect(app, raw, hydra_no_effect);
}

Status finish_hydra(const RawCli& raw) { return first_refusal(raw, hydra_refusals); }

}  // namespace ferry::cli_detail
