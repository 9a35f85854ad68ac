// Open MPI 4 mpirun's command line: the flags job scripts use, --mca plm_rsh_args read as
// SSH settings, --prefix as Open MPI's install prefix on the hosts.

#include <unistd.h>

#include "cli_parts.hpp"
#include "ferry/cli/ssh_args.hpp"
#include "ferry/common/text.hpp"
#include "ferry/plan/limits.hpp"
#include "option_checks.hpp"

namespace ferry::cli_detail {
namespace {

// Open MPI 4.1 mpirun flags that ferry cannot honour, with the reason and what to use.
const Refusal mpirun_refusals[] = {
    {"--am", 1,
     "MCA parameter set files are not read by ferry; give each setting as --mca NAME VALUE"},
    {"--tune", 1,
     "tune files are not read by ferry; give their settings as --mca NAME VALUE and -x VAR"},
    {"--cpu-set,--cpu-list", 1,
     "ferry binds ranks within the CPUs each host allows it (its cgroup cpuset); it takes no "
     "CPU list"},
    {"--npersocket", 1,
     "ranks per socket are not supported; -N N with --map-by socket spreads each host's "
     "ranks over its sockets"},
    {"--nolocal", 0,
     "leave this machine out of -H/--hostfile instead: ferry runs ranks on every host given"},
    {"--display-topo", 0,
     "ferryrun --check prints each host's cores, NUMA nodes and accelerators (it starts no "
     "rank)"},
    {"--enable-recovery", 0,
     "a failed rank ends the job; --max-restarts N runs it again, --min-hosts M goes on "
     "without a lost host"},
    {"--continuous", 0, "a job ends when its ranks do (--max-restarts N restarts it)"},
    {"--path", 1, "give the program's full path, or -x PATH=... for the ranks"},
    {"--launch-agent", 1, "ferry starts ferryd on the hosts, not orted (see --ferryd)"},
    {"--debug,--tv", 0,
     "ferry starts no debugger; --timeout and --stall-timeout print every rank's stacks"},
    {"--debugger", 1,
     "ferry starts no debugger; --timeout and --stall-timeout print every rank's stacks"},
    {"--xterm", 1, "ferry opens no xterm; ranks' output comes back tagged (--tag-output)"},
    {"--xml", 0, "ferry has no XML output"},
    {"--xml-file", 1, "ferry has no XML output"},
    {"--output-proctable", 0, "ferry prints no process table (--report-bindings shows ranks)"},
    {"--report-events", 1, "ferry reports no events to a URI"},
    {"--report-pid,--report-uri", 1, "ferry has no such report"},
    {"--index-argv-by-rank", 0, "every rank gets the same arguments"},
    {"--set-cwd-to-session-dir", 0, "the ranks' directory is --wdir (default: the current one)"},
    {"--personality", 1, "ferry speaks Open MPI's mpirun line, nothing else"},
    {"--cartofile", 1, "cartography files are not read by ferry"},
    {"--dvm,--novm", 0, "ferry starts its daemons for each job: there is no DVM"},
    {"--hnp,--ompi-server,--max-vm-size", 1,
     "ferry starts its daemons for each job: there is no DVM or ompi-server"},
};

// Open MPI 4.1 mpirun flags that change nothing under ferry.
const NoEffect mpirun_no_effect[] = {
    {"--disable-recovery", 0, "a failed rank ends the job, as it always does under ferry"},
    {"--leave-session-attached", 0, "ferryd stays attached to ferryrun's session anyway"},
    {"--do-not-resolve", 0, "ferry resolves host names as SSH does"},
    {"--use-regexp", 0, "no effect under ferry"},
    {"--report-child-jobs-separately", 0, "ferry starts no child jobs"},
    {"--show-progress", 0, "no effect under ferry (--verbose times each step)"},
    {"--noprefix", 0, "no effect under ferry"},
    {"--enable-instant-on-support", 0, "no effect under ferry"},
    {"--fwd-mpirun-port", 0, "ferry's ranks need no mpirun port"},
    {"-d,--debug-devel,--debug-daemons,--debug-daemons-file", 0,
     "no effect; ferry's --verbose says what is done"},
};

// Open MPI's older spellings of --map-by and --bind-to, still taken by its 4.1 mpirun.
struct OldSpelling {
  const char* flag;
  const char* word;
  bool binding;  // --bind-to's word, else --map-by's
};
const OldSpelling old_spellings[] = {
    {"--bynode", "node", false},          {"--byslot", "slot", false},
    {"--bycore", "core", false},          {"--bind-to-core", "core", true},
    {"--bind-to-socket", "socket", true},
};

// The older spellings, --ppr and --pernode (for -N), --nooversubscribe.
void add_old_spellings(CLI::App& app, RawCli& raw) {
  for (const OldSpelling& o : old_spellings) {
    auto& into = o.binding ? raw.bind_aliases : raw.map_aliases;
    const std::string flag = o.flag;
    const std::string word = o.word;
    app.add_flag_function(
           flag, [&into, flag, word](std::int64_t) { into.emplace_back(flag, word); },
           (o.binding ? "--bind-to " : "--map-by ") + word)
        ->group("");
  }
  app.add_option_function<std::string>(
         "--ppr",
         [&raw](const std::string& v) { raw.map_aliases.emplace_back("--ppr", "ppr:" + v); },
         "Ranks per resource: --ppr N:node is -N N")
      ->group("Binding");
  app.add_flag("--pernode", raw.pernode, "One rank on each host (-N 1)")->group("");
  app.add_flag("--nooversubscribe", raw.no_oversubscribe,
               "No more processes than slots (the default)")
      ->group("");
}

// How the user wrote a word: "--map-by slot", "-bynode", "--ppr 2:node".
std::string as_given(const RawCli& raw, const std::string& flag, const std::string& word) {
  std::string typed = typed_as(raw, flag);
  if (flag == "--ppr") return typed + " " + word.substr(4);
  if (flag.starts_with("--by") || flag.starts_with("--bind-to-")) return typed;
  return typed + " " + word;
}

// Older spellings against the newer flag's value: the same word, or an error naming both.
Status merge_word(const RawCli& raw, std::string& word,
                  const std::vector<std::pair<std::string, std::string>>& aliases,
                  const char* flag) {
  std::string from = as_given(raw, flag, word);
  for (const auto& [alias, value] : aliases) {
    if (alias == "--ppr") {
      const auto parts = split(value, ':');
      if (parts.size() != 3 || lower(parts[2]) != "node")
        return make_error(as_given(raw, alias, value) +
                          ": only ranks per node are supported (--ppr N:node, or -N N)");
    }
    if (word.empty()) {
      word = value;
      from = as_given(raw, alias, value);
    } else if (lower(word) != lower(value)) {
      return make_error(from + " and " + as_given(raw, alias, value) +
                        " contradict each other: give one");
    }
  }
  return {};
}

Status merge_old_spellings(RawCli& raw) {
  if (Status st = merge_word(raw, raw.map_by, raw.map_aliases, "--map-by"); !st) return st;
  if (Status st = merge_word(raw, raw.bind_to, raw.bind_aliases, "--bind-to"); !st) return st;
  if (raw.pernode) {
    if (raw.per_node > 1)
      return make_error(typed_as(raw, "--pernode") + " and -N " + std::to_string(raw.per_node) +
                        " contradict each other: give one");
    raw.per_node = 1;
  }
  // Hardware threads are the CPUs: each rank is bound to hwthreads, and --cpus-per-rank and
  // PE=n count them, unless --bind-to says otherwise.
  if (raw.use_hwthreads && raw.bind_to.empty()) raw.bind_to = "hwthread";
  if (!raw.default_hostfile.empty() && raw.host_options.empty() && raw.hostfiles.empty())
    raw.hostfiles.push_back(raw.default_hostfile);
  return {};
}

}  // namespace

void add_mpirun_options(CLI::App& app, FrontendConfig& cfg, RawCli& raw) {
  JobOptions& job = cfg.job;
  app.add_option("-n,-c,--np,--n", job.np,
                 "Number of processes to run (-np; default: one per slot, or -N on each host)")
      ->transform(whole_number(1, kMaxRanks))
      ->group("Job");
  app.add_option("-H,--host", raw.host_options, "List of hosts: host1:2,host2")
      ->allow_extra_args(false)
      ->group("Hosts");
  app.add_option("--hostfile,--machinefile", raw.hostfiles, "Hostfile ('host slots=N')")
      ->allow_extra_args(false)
      ->group("Hosts");
  app.add_option("--default-hostfile", raw.default_hostfile,
                 "Hostfile used when neither -H nor --hostfile is given")
      ->group("Hosts");
  app.add_flag("--display-allocation,--display-devel-allocation", raw.display_allocation,
               "Print the job's hosts and their slots before it starts")
      ->group("Hosts");
  app.add_option("-x", raw.exports, "Export VAR or VAR=value to the processes")
      ->allow_extra_args(false)
      ->group("Job");
  app.add_option("--wdir,--wd", job.wdir, "Working directory of the processes (-wdir)")
      ->check(not_empty())
      ->group("Job");
  app.add_option("--stdin", raw.stdin_spec, "Rank that gets stdin (default 0), or none")
      ->group("Job");
  app.add_option("--prefix", raw.prefix,
                 "Open MPI's prefix on the hosts: its bin and lib first "
                 "on the ranks' PATH and LD_LIBRARY_PATH")
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
  app.add_option("--mca,--gmca", raw.mca_help,
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
  app.add_flag("--display-map,--display-devel-map,--display-diffable-map",
               cfg.job.binding.report_bindings,
               "Print the job map before the ranks start: each rank's host, cores, NUMA node "
               "and devices (as --report-bindings)")
      ->group("Binding");
  app.add_flag("--use-hwthread-cpus", raw.use_hwthreads,
               "Hardware threads are the CPUs: bind each rank to hwthreads (unless --bind-to), "
               "--cpus-per-rank counts them")
      ->group("Binding");
  app.add_flag("--do-not-launch", cfg.job.check,
               "Reach the hosts and check them as for the job (ferryrun --check), start no rank")
      ->group("Start");
  add_old_spellings(app, raw);
  add_hydra_options(app, cfg, raw);
  add_refusals(app, raw, mpirun_refusals, "");
  add_no_effect(app, raw, mpirun_no_effect);
  add_placement_options(app, cfg, raw, true);
  add_shared_options(app, cfg, raw);
}

namespace {

// --prefix P as Open MPI's mpirun reads it: where Open MPI is installed on the hosts, so the
// ranks get P/bin first on PATH and P/lib first on LD_LIBRARY_PATH (over each host's own
// values). ferryd is P/bin/ferryd only where this machine has one there (ferry installed
// under that prefix, as an older ferry's README suggested): a line that names Open MPI's
// prefix must not lose its ferryd.
Status apply_prefix(JobOptions& job, RawCli& raw) {
  if (raw.prefix.empty()) return {};
  std::string p = raw.prefix;
  if (p.front() != '/') return make_error("--prefix: '" + p + "' is not an absolute path");
  if (p.find(':') != std::string::npos)
    return make_error("--prefix: '" + p + "' has a ':', which would split PATH");
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  if (p == "/") p.clear();
  job.path_prepends = {"PATH=" + p + "/bin", "LD_LIBRARY_PATH=" + p + "/lib"};
  std::string note = "--prefix " + raw.prefix + ": ranks get " + p + "/bin first on PATH and " + p +
                     "/lib first on LD_LIBRARY_PATH";
  const std::string ferryd = p + "/bin/ferryd";
  if (raw.ferryd.empty() && ::access(ferryd.c_str(), X_OK) == 0) {
    raw.ferryd = ferryd;
    note += "; ferryd is " + ferryd;
  } else if (raw.ferryd.empty()) {
    note += "; no ferryd at " + ferryd + " on this machine, so the usual one";
  }
  raw.notes.push_back(std::move(note));
  return {};
}

}  // namespace

Status mpirun_refusal(const RawCli& raw) {
  if (Status st = first_refusal(raw, mpirun_refusals); !st) return st;
  return finish_hydra(raw);
}

Status finish_mpirun(FrontendConfig& cfg, RawCli& raw) {
  if (Status st = merge_old_spellings(raw); !st) return st;
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
  return apply_prefix(cfg.job, raw);
}

}  // namespace ferry::cli_detail
