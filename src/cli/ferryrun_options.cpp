// ferryrun's own options, and the ones every personality shares.

#include "cli_parts.hpp"
#include "ferry/plan/limits.hpp"
#include "option_checks.hpp"

namespace ferry::cli_detail {

namespace {

// What ferry does about jobs that hang: limits, the state report, the preflight, --check.
void add_hang_options(CLI::App& app, FrontendConfig& cfg, RawCli& raw) {
  JobOptions& job = cfg.job;
  app.add_option("--timeout", job.timeout_s,
                 "Seconds the whole job may run: then print the state of every rank (stacks "
                 "too), abort the job and exit 124 (default: no limit)")
      ->transform(whole_number(1, 31'536'000))
      ->group("Hangs");
  app.add_option("--stall-timeout", job.stall_timeout_s,
                 "Print the state of every rank when none printed anything for S seconds, and "
                 "again after each further S (default off); Ctrl-\\ (SIGQUIT) prints it any time")
      ->transform(whole_number(1, 31'536'000))
      ->group("Hangs");
  app.add_flag("--stall-abort", job.stall_abort,
               "After the --stall-timeout report, abort the job as --timeout does (exit 124)")
      ->group("Hangs");
  app.add_flag("--check", job.check,
               "Reach the job's hosts, choose the network and run the preflight as for the job, "
               "then print one table of the hosts (ferryd, cores, NUMA, accelerators, interface, "
               "python3/torch/NCCL/CUDA/MPI versions; differences marked) and start no rank; "
               "exit 0 when the job could start (no command needed)")
      ->group("Hangs");
  app.add_flag("--no-preflight", raw.no_preflight,
               "Do not test, before the ranks start, that every host reaches rank 0's host at "
               "MASTER_ADDR:MASTER_PORT and the next host's own address on the chosen "
               "interface (the test fails a launch that would hang)")
      ->group("Hangs");
}

// The job's view: what every rank used and when, as a page, a trace and console lines.
void add_view_options(CLI::App& app, FrontendConfig& cfg) {
  JobOptions& job = cfg.job;
  app.add_flag("--top", job.top,
               "Show a live table of the ranks on this terminal once they start (CPU, memory, "
               "state, output rate, cores, last line); keys: q leave it (the job goes on), s "
               "sort, h per host, / filter, o a rank's output. Ranks get no stdin")
      ->group("View");
  app.add_option("--report", job.report_file,
                 "After the job, write FILE.html: one self-contained page with every rank's "
                 "timeline, CPU and memory over time per host and rank, the binding map and "
                 "the exit table (every ferryd samples its ranks once a second)")
      ->group("View");
  app.add_option("--trace", job.trace_file,
                 "After the job, write the same timeline to FILE.json in the Chrome trace "
                 "format (open it in Perfetto or chrome://tracing)")
      ->group("View");
  app.add_option("--stragglers", job.stragglers_s,
                 "Name in the console each rank that lags its peers for SECONDS: CPU or "
                 "output below --straggler-fraction of the median rank's, or stopped, or in "
                 "disk sleep (default off)")
      ->transform(whole_number(1, 86'400))
      ->group("View");
  app.add_option("--straggler-fraction", job.straggler_fraction,
                 "A rank lags when its CPU use or output stays below this fraction of the "
                 "median rank's (default 0.25)")
      ->transform(decimal_number(0.01, 0.99))
      ->group("View");
}

// A warm pool (`ferry up`): which one, or none.
void add_pool_options(CLI::App& app, FrontendConfig& cfg) {
  app.add_option("--pool", cfg.pool,
                 "Start the job through the warm pool NAME ('ferry up'); by default through the "
                 "running pool that serves the most of its hosts, if any")
      ->group("Start");
  app.add_flag("--no-pool", cfg.no_pool,
               "Reach every host directly, even where a warm pool serves it")
      ->group("Start");
}

}  // namespace

void add_shared_options(CLI::App& app, FrontendConfig& cfg, RawCli& raw) {
  JobOptions& job = cfg.job;
  app.add_option("--config", raw.config_file,
                 "TOML job file (hosts, defaults, environment, binding, output); options "
                 "given here win (docs/job-file.md)")
      ->group("Job");
  app.add_option("--kill-grace", job.kill_grace_s,
                 "Seconds between SIGTERM and SIGKILL when a job is aborted (default 5)")
      ->transform(decimal_number(0, 3600))
      ->group("Job");
  add_hang_options(app, cfg, raw);
  add_view_options(app, cfg);
  add_session_options(app, raw);
  add_sync_options(app, raw);
  app.add_flag("--stdin-none", raw.stdin_none, "Give every rank /dev/null as stdin")->group("Job");
  app.add_flag("--no-pmi", job.no_pmi,
               "Serve no MPI rendezvous (PMI-1 for MPICH, PMIx for Open MPI): the ranks get "
               "none of their variables. Not needed for speed: ferryd starts its PMIx server "
               "only when an Open MPI rank connects")
      ->group("Job");
  app.add_option("--launcher", raw.launcher,
                 "How ferryd starts on the hosts: ssh, slurm (one srun step inside the "
                 "allocation), local (all on this machine), or auto (default: slurm inside an "
                 "allocation whose nodes are the hosts, else ssh); hydra's rsh and fork too")
      ->check(CLI::IsMember({"auto", "ssh", "slurm", "local", "rsh", "fork"}))
      ->group("Start");
  add_pool_options(app, cfg);
  app.add_option("--ferryd", raw.ferryd,
                 "Path of ferryd on the hosts (default: beside this ferryrun)")
      ->group("Start");
  app.add_option("--ship-ferryd", raw.ship_ferryd,
                 "Send ferryrun's own ferryd over the SSH session to hosts that lack one: "
                 "auto (where the host's ferryd is missing or speaks another protocol "
                 "version; default), always, or never. Cached per user on the host, "
                 "sent once (docs/design.md)")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->group("Start");
  app.add_option("--ferryd-dir", raw.ferryd_dir,
                 "Folder of ferryd-<arch> files (ferryd-aarch64, ...) to ship to hosts of "
                 "another architecture than this one")
      ->check(CLI::ExistingDirectory)
      ->group("Start");
  app.add_option("--ssh-user", cfg.ssh.user, "SSH login user for hosts that name none")
      ->group("SSH");
  app.add_option("--ssh-config", cfg.ssh.config_file,
                 "ssh_config file to read instead of ~/.ssh/config")
      ->group("SSH");
  app.add_flag("--ssh-accept-new", cfg.ssh.accept_new,
               "Add unknown host keys to known_hosts (changed keys are still refused)")
      ->group("SSH");
  app.add_option("--heartbeat", job.heartbeat_s,
                 "Seconds between heartbeats both ways (and SSH keepalives): ferryrun loses a "
                 "host, and ferryd loses ferryrun, after 3 silent intervals (default off)")
      ->transform(whole_number(0, 86400))
      ->group("SSH");
  app.add_option("--max-restarts,--max_restarts", job.max_restarts,
                 "After a rank fails or a host is lost, run the whole job again, at most N times "
                 "(default 0, or $PET_MAX_RESTARTS as torchrun)")
      ->envname("PET_MAX_RESTARTS")
      ->transform(whole_number(0, 1'000'000))
      ->group("Fault tolerance");
  app.add_option("--min-hosts", job.min_hosts,
                 "When a host is lost, go on without it while at least M hosts are left "
                 "(not counted as a restart; default: every host is needed)")
      ->transform(whole_number(1, 1'000'000))
      ->group("Fault tolerance");
  app.add_option("--devices", raw.devices, "Use only these device indices on each host (0,2,4)")
      ->group("Binding");
  app.add_option("--devices-per-rank", job.binding.devices_per_rank,
                 "Devices each rank gets (default: 1 when the host has enough)")
      ->transform(whole_number(0, 1'000'000))
      ->group("Binding");
  app.add_flag("--isolate-devices", job.binding.isolate_devices,
               "Each rank sees only its own devices")
      ->group("Binding");
  app.add_flag("--bind-mem", job.binding.bind_mem, "Bind each rank's memory to its NUMA node(s)")
      ->group("Binding");
}

void add_placement_options(CLI::App& app, FrontendConfig& cfg, RawCli& raw, bool short_n) {
  app.add_option("--bind-to", raw.bind_to, "Bind each rank to: none, core, hwthread, socket, numa")
      ->group("Binding");
  app.add_option("--map-by", raw.map_by,
                 "Spread ranks by: slot (fill hosts), node (round-robin over hosts), "
                 "ppr:N:node; modifiers :PE=n (cores per rank), :OVERSUBSCRIBE")
      ->group("Binding");
  app.add_option("--rank-by", raw.rank_by, "Number ranks by: slot or node")->group("Binding");
  app.add_option(short_n ? "-N,--npernode" : "--npernode", raw.per_node,
                 "Exactly this many ranks on each host")
      ->transform(whole_number(1, 1'000'000))
      ->group("Binding");
  app.add_flag("--report-bindings", cfg.job.binding.report_bindings,
               "Print each rank's binding before it starts")
      ->group("Binding");
  app.add_option("--cpus-per-rank,--cpus-per-proc", cfg.job.binding.cpus_per_rank,
                 "Cores per rank (default: the host's cores / local ranks)")
      ->transform(whole_number(0, 1'000'000))
      ->group("Binding");
  if (raw.who != Personality::kHorovodrun)
    app.add_option("--rankfile,--rf", raw.rankfile,
                   "Each rank's host and cores from FILE: 'rank N=HOST slot=SOCKET:CORES' lines")
        ->group("Binding");
}

namespace {

// Output tags and files, the interface choice, torchrun's spellings.
void add_ferryrun_output_and_job_options(CLI::App& app, FrontendConfig& cfg, RawCli& raw) {
  JobOptions& job = cfg.job;
  app.add_option("--tag-style", raw.tag,
                 "Output tags: horovod ([r]<stdout>:), host ([r@host]<stdout>:), openmpi "
                 "([1,r]<stdout>:), mpich ([r] ) or none")
      ->check(CLI::IsMember({"horovod", "host", "openmpi", "mpich", "none"}))
      ->group("Output");
  app.add_flag("--timestamp-output,--prefix-output-with-timestamp", cfg.output.timestamps,
               "Prefix each line with the time")
      ->group("Output");
  app.add_flag("--merge-stderr-to-stdout", cfg.output.merge_stderr,
               "Print ranks' stderr lines on stdout")
      ->group("Output");
  app.add_option("--output-filename", cfg.output.output_dir,
                 "Also write each rank's output to DIR/rank.N/stdout|stderr")
      ->group("Output");
  app.add_option("--output-layout", raw.layout,
                 "Per-rank file layout: horovod (DIR/rank.N/) or openmpi (DIR/1/rank.N/)")
      ->check(CLI::IsMember({"horovod", "openmpi"}))
      ->group("Output");
  app.add_flag("--verbose", job.verbose, "Say what ferryrun does and how long it takes");
  app.add_option_function<std::vector<std::string>>(
         "--network-interface,--network-interfaces",
         [&job](const std::vector<std::string>& values) {
           job.network_interfaces.clear();  // over the job file's
           for (const auto& v : values)
             for (size_t i = 0; i <= v.size();) {
               size_t j = std::min(v.find(',', i), v.size());
               if (j > i) job.network_interfaces.push_back(v.substr(i, j - i));
               i = j + 1;
             }
         },
         "Interface for NCCL/gloo/HCCL/MPI traffic, in NCCL's syntax: name prefixes (eth or "
         "eth,ib: each host takes the first it has, its exact name first), =eth0 exact, "
         "^docker,lo excluded, 10.1.0.0/16 the interface holding an address in that subnet; "
         "default: chosen from every host's interfaces")
      ->allow_extra_args(false)
      ->group("Job");
  app.add_option("--nnodes", raw.nnodes,
                 "torchrun's spelling: MIN:MAX hosts (--min-hosts MIN; the job's hosts must "
                 "number at most MAX), or N (exactly N hosts)")
      ->group("Fault tolerance");
  app.add_flag("--torch-local-rank-arg", raw.torch_arg,
               "Append --local-rank=N to each rank's command (legacy "
               "torch.distributed.launch scripts; =underscore: --local_rank=N, older ones)")
      ->group("Job");
}

}  // namespace

void add_ferryrun_options(CLI::App& app, FrontendConfig& cfg, RawCli& raw) {
  JobOptions& job = cfg.job;
  app.add_option("--compat", raw.compat,
                 "Speak another launcher's command line: horovodrun or mpirun "
                 "(must come first)")
      ->group("Job");
  app.add_option("-n,--np", job.np, "Number of ranks (default: one per slot, or -N on each host)")
      ->transform(whole_number(1, kMaxRanks))
      ->group("Job");
  app.add_option("--min-np", job.min_ranks,
                 "When a host is lost, go on without it while at least N ranks are left (as "
                 "--min-hosts, in ranks; horovodrun's --min-np is Horovod's elastic mode)")
      ->transform(whole_number(1, 1'000'000))
      ->group("Fault tolerance");
  app.add_option("-H,--host", raw.host_options, "Hosts as host[:slots][,host[:slots]...]")
      ->allow_extra_args(false)
      ->group("Hosts");
  app.add_option("--hostfile,--machinefile", raw.hostfiles,
                 "Hostfile with lines 'host slots=N [port=P user=U ferryd=PATH]'")
      ->allow_extra_args(false)
      ->group("Hosts");
  app.add_option("--default-slots", raw.default_slots, "Slots of hosts that name none (default 1)")
      ->transform(whole_number(1, 1'000'000))
      ->group("Hosts");
  app.add_flag("--oversubscribe", job.oversubscribe, "Allow more ranks than slots on a host")
      ->group("Job");
  app.add_option("-x", raw.exports, "Export VAR (from this environment) or VAR=value to ranks")
      ->allow_extra_args(false)
      ->group("Job");
  app.add_option("--wdir", job.wdir, "Working directory of the ranks (default: current)")
      ->check(not_empty())
      ->group("Job");
  app.add_option("--stdin", raw.stdin_spec, "Rank that reads ferryrun's stdin, or none (default 0)")
      ->group("Job");
  app.add_option("--start-timeout", job.start_timeout_s,
                 "Seconds to connect to every host and start ferryd (default 30)")
      ->transform(whole_number(1, 86400))
      ->group("Start");
  app.add_option("-p,--ssh-port", cfg.ssh.port, "SSH port for hosts that name none")
      ->transform(whole_number(1, 65535))
      ->group("SSH");
  app.add_option("-i,--ssh-identity-file", cfg.ssh.identity_file, "SSH private key")->group("SSH");
  app.add_option("-l", cfg.ssh.user, "SSH login user for hosts that name none (--ssh-user)")
      ->group("SSH");
  add_ferryrun_output_and_job_options(app, cfg, raw);
  add_console_options(app, cfg, raw);
  add_placement_options(app, cfg, raw, true);
  add_shared_options(app, cfg, raw);
}

}  // namespace ferry::cli_detail
