// Open MPI 4 mpirun's command line: the flags job scripts use, --mca plm_rsh_args read as
// SSH settings, --prefix as where ferryd lives.

#include "cli_parts.hpp"
#include "ferry/cli/ssh_args.hpp"
#include "ferry/common/text.hpp"
#include "ferry/plan/limits.hpp"
#include "option_checks.hpp"

namespace ferry::cli_detail {

void add_mpirun_options(CLI::App& app, FrontendConfig& cfg, RawCli& raw) {
  JobOptions& job = cfg.job;
  app.add_option("-n,-c,--np", job.np,
                 "Number of processes to run (-np; default: one per slot, or -N on each host)")
      ->transform(whole_number(1, kMaxRanks))
      ->group("Job");
  app.add_option("-H,--host", raw.host_options, "List of hosts: host1:2,host2")
      ->allow_extra_args(false)
      ->group("Hosts");
  app.add_option("--hostfile,--machinefile", raw.hostfiles, "Hostfile ('host slots=N')")
      ->allow_extra_args(false)
      ->group("Hosts");
  app.add_option("-x", raw.exports, "Export VAR or VAR=value to the processes")
      ->allow_extra_args(false)
      ->group("Job");
  app.add_option("--wdir,--wd", job.wdir, "Working directory of the processes (-wdir)")
      ->check(not_empty())
      ->group("Job");
  app.add_option("--stdin", raw.stdin_spec, "Rank that gets stdin (default 0), or none")
      ->group("Job");
  app.add_option("--prefix", raw.prefix, "Install prefix on the hosts: ferryd is PREFIX/bin/ferryd")
      ->group("Start");
  app.add_flag("--allow-run-as-root", raw.accepted, "Accepted (ferry runs as root when you do)")
      ->group("Job");
  app.add_flag("--oversubscribe", job.oversubscribe, "Allow more processes than slots")
      ->group("Job");
  app.add_flag("--tag-output", raw.tag_output, "Tag each line with [1,rank]<stdout>:")
      ->group("Output");
  app.add_flag("--timestamp-output", cfg.output.timestamps, "Timestamp each line")->group("Output");
  app.add_option("--output-filename", cfg.output.output_dir,
                 "Also write each rank's output to DIR/1/rank.N/stdout|stderr")
      ->group("Output");
  app.add_flag("--merge-stderr-to-stdout", cfg.output.merge_stderr, "Print stderr lines on stdout")
      ->group("Output");
  // Read before CLI11 parses (its value may start with '-'); listed here for --help.
  app.add_option("--mca", raw.mca_help,
                 "MCA parameter: plm_rsh_args \"-p 2222 -i key -l user\" sets SSH "
                 "options; others reach the ranks as OMPI_MCA_<name>=<value>")
      ->expected(2)
      ->group("Job");
  app.add_option("--ssh-port", cfg.ssh.port, "SSH port for hosts that name none (ferry)")
      ->transform(whole_number(1, 65535))
      ->group("SSH");
  app.add_option("--ssh-identity-file", cfg.ssh.identity_file, "SSH private key (ferry)")
      ->group("SSH");
  app.add_option("--start-timeout", job.start_timeout_s,
                 "Seconds to reach every host (ferry; default 30)")
      ->transform(whole_number(1, 86400))
      ->group("Start");
  app.add_flag("-v,--verbose", job.verbose, "Say what is done and how long it takes");
  app.add_flag("-q,--quiet", raw.accepted, "Accepted")->group("Job");
  app.add_flag("--report-state-on-timeout,--get-stack-traces", raw.accepted,
               "Accepted: ferry always prints the ranks' state and stacks at --timeout")
      ->group("Hangs");
  add_placement_options(app, cfg, raw, true);
  add_shared_options(app, cfg, raw);
}

Status finish_mpirun(FrontendConfig& cfg, RawCli& raw) {
  std::vector<std::string> mca_exports;
  for (const auto& [key, value] : raw.mca) {
    if (key == "plm_rsh_args" || key == "orte_rsh_args") {
      Status st = apply_plm_rsh_args(value, cfg.ssh, cfg.job.heartbeat_s, raw.notes);
      if (!st) return make_error("--mca " + key + ": " + st.error().message);
    } else if (key == "plm") {
      if (value == "slurm")
        raw.launcher = "slurm";
      else if (value == "rsh" || value == "ssh")
        raw.launcher = "ssh";
      else if (value == "isolated")
        raw.launcher = "local";
      else
        return make_error("--mca plm " + value +
                          ": ferry starts its daemons with slurm, rsh "
                          "(its own SSH) or isolated (this machine)");
    } else if (key == "plm_rsh_agent" || key == "orte_rsh_agent") {
      std::string agent = value.substr(0, value.find(' '));
      if (agent != "ssh" && agent.find("/ssh") == std::string::npos)
        return make_error("--mca " + key + " '" + value +
                          "': ferry reaches hosts with its own SSH client only");
    } else {
      // Open MPI's ranks read every other parameter from their environment, as mpirun
      // passes it. The TCP interface lists choose ferry's interface too (NCCL, gloo,
      // MASTER_ADDR), unless --network-interface did.
      mca_exports.push_back("OMPI_MCA_" + key + "=" + value);
      const bool include = key == "btl_tcp_if_include" || key == "oob_tcp_if_include";
      const bool exclude = key == "btl_tcp_if_exclude" || key == "oob_tcp_if_exclude";
      if ((include && cfg.job.network_interfaces.empty()) || exclude)
        for (const auto& name : split(value, ','))
          if (auto n = trim(name); !n.empty())
            (include ? cfg.job.network_interfaces : cfg.job.network_exclude).emplace_back(n);
    }
  }
  raw.exports.insert(raw.exports.begin(), mca_exports.begin(), mca_exports.end());
  if (!raw.prefix.empty() && raw.ferryd.empty()) {
    std::string p = raw.prefix;
    while (p.size() > 1 && p.back() == '/') p.pop_back();
    raw.ferryd = p + "/bin/ferryd";
  }
  return {};
}

}  // namespace ferry::cli_detail
