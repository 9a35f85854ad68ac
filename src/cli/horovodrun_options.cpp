// horovodrun's command line (horovod/runner/launch.py): its flags, what ferry refuses, and
// what it forwards to the ranks.

#include "cli_parts.hpp"
#include "cli_text.hpp"
#include "ferry/common/text.hpp"
#include "ferry/plan/limits.hpp"
#include "option_checks.hpp"

namespace ferry::cli_detail {
namespace {

// Flags horovodrun has and ferry cannot honour, with the reason given to the user.
const Refusal refusals[] = {
    {"--config-file", 1,
     "Horovod's YAML config files are not read by ferry; put the settings in a TOML job "
     "file and pass --config job.toml (see docs/job-file.md)"},
    {"--cb,--check-build", 0,
     "ferry cannot inspect Horovod's build; ask Horovod: python -c \"import "
     "horovod.runner.launch as l; l.check_build(False)\""},
    {"--jsrun", 0, "ferry starts ranks over SSH itself; jsrun (LSF) is not supported"},
    {"--mpi-args", 1,
     "there is no mpirun underneath ferry; use ferry's own options (--bind-to, --map-by, -x)"},
    {"--binding-args", 1, "use ferry's --bind-to, --map-by and --cpus-per-rank instead"},
};

// Tunables that take a value; stored under the flag's name without dashes.
struct ValueTunable {
  const char* flag;
  const char* help;
};
const ValueTunable value_tunables[] = {
    {"fusion-threshold-mb", "MB of tensor fusion (HOROVOD_FUSION_THRESHOLD, in bytes)"},
    {"cycle-time-ms", "Milliseconds between fusion cycles (HOROVOD_CYCLE_TIME)"},
    {"cache-capacity", "Tensor names cached (HOROVOD_CACHE_CAPACITY)"},
    {"autotune-log-file", "Autotune trial log (HOROVOD_AUTOTUNE_LOG)"},
    {"autotune-warmup-samples", "HOROVOD_AUTOTUNE_WARMUP_SAMPLES"},
    {"autotune-steps-per-sample", "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE"},
    {"autotune-bayes-opt-max-samples", "HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES"},
    {"autotune-gaussian-process-noise", "In [0, 1] (HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE)"},
    {"timeline-filename", "Timeline JSON file (HOROVOD_TIMELINE)"},
    {"stall-check-warning-time-seconds", "HOROVOD_STALL_CHECK_TIME_SECONDS"},
    {"stall-check-shutdown-time-seconds", "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS"},
    {"num-nccl-streams", "HOROVOD_NUM_NCCL_STREAMS"},
    {"thread-affinity", "Background thread's core (HOROVOD_THREAD_AFFINITY)"},
    {"gloo-timeout-seconds", "HOROVOD_GLOO_TIMEOUT_SECONDS"},
    {"log-level", "TRACE, DEBUG, INFO, WARNING, ERROR, FATAL (HOROVOD_LOG_LEVEL)"},
};

// On/off tunables: "--name,!--negation" → stored as "1" / "0" under `key`.
struct OnOff {
  const char* names;
  const char* key;
  const char* help;
};
const OnOff on_off_tunables[] = {
    {"--hierarchical-allreduce,!--no-hierarchical-allreduce", "hierarchical-allreduce",
     "HOROVOD_HIERARCHICAL_ALLREDUCE=1/0"},
    {"--hierarchical-allgather,!--no-hierarchical-allgather", "hierarchical-allgather",
     "HOROVOD_HIERARCHICAL_ALLGATHER=1/0"},
    {"--torus-allreduce,!--no-torus-allreduce", "torus-allreduce",
     "HOROVOD_TORUS_ALLREDUCE=1/0 (2D NCCL torus allreduce)"},
    {"--autotune,!--no-autotune", "autotune", "HOROVOD_AUTOTUNE=1 (and the autotune flags)"},
    {"--timeline-mark-cycles,!--no-timeline-mark-cycles", "timeline-mark-cycles",
     "HOROVOD_TIMELINE_MARK_CYCLES=1/0 (with --timeline-filename)"},
    {"--no-stall-check,!--stall-check", "no-stall-check", "HOROVOD_STALL_CHECK_DISABLE=1/0"},
    {"--mpi-threads-disable,!--no-mpi-threads-disable", "mpi-threads-disable",
     "HOROVOD_MPI_THREADS_DISABLE=1/0"},
    {"--log-without-timestamp,!--log-with-timestamp", "log-without-timestamp",
     "HOROVOD_LOG_HIDE_TIME=1/0"},
    {"--log-hide-timestamp,!--no-log-hide-timestamp", "log-without-timestamp",
     "Old spelling of --log-without-timestamp"},
    {"--tcp", "tcp", "TCP only: NCCL_IB_DISABLE=1"},
};

void add_nics(RawCli& raw, const std::string& value) {
  for (auto& n : split(value, ',')) {
    std::string t(trim(n));
    if (!t.empty()) raw.nics.push_back(t);
  }
}

// Horovod's tunables (each becomes its HOROVOD_* variable) and the flags ferry refuses, with
// the reason given when one is used.
void add_tunables_and_refusals(CLI::App& app, RawCli& raw) {
  for (const ValueTunable& t : value_tunables) {
    std::string key = t.flag;
    auto* o = app.add_option_function<std::string>(
        "--" + key, [&raw, key](const std::string& v) { raw.horovod[key] = v; }, t.help);
    o->allow_extra_args(false)->group("Horovod tunables");
  }
  for (const OnOff& f : on_off_tunables) {
    std::string key = f.key;
    app.add_flag_function(
           f.names, [&raw, key](std::int64_t count) { raw.horovod[key] = count > 0 ? "1" : "0"; },
           f.help)
        ->group("Horovod tunables");
  }
  add_refusals(app, raw, refusals, "Not supported");
}

}  // namespace

void add_horovodrun_options(CLI::App& app, FrontendConfig& cfg, RawCli& raw) {
  JobOptions& job = cfg.job;
  app.add_option("--np,--num-proc", job.np,
                 "Total number of processes (-np; default: one per slot)")
      ->transform(whole_number(1, kMaxRanks))
      ->group("Job");
  app.add_option("--min-np,--min-num-proc", job.min_ranks,
                 "Elastic mode (hvd.elastic scripts): fewest workers to go on with. With "
                 "--host-discovery-script the hosts come and go; with -H/--hostfile (2 hosts or "
                 "more) a failing host leaves and the others go on (default: -np)")
      ->transform(whole_number(1, 1'000'000))
      ->group("Elastic");
  app.add_option("--max-np,--max-num-proc", raw.max_np,
                 "Elastic mode: most workers (default: every slot)")
      ->transform(whole_number(1, 1'000'000))
      ->group("Elastic");
  app.add_option("-H,--hosts", raw.host_options, "Hosts and slots: host1:2,host2:4")
      ->allow_extra_args(false)
      ->group("Hosts");
  app.add_option("--hostfile", raw.hostfiles, "Hostfile with lines '<hostname> slots=<slots>'")
      ->allow_extra_args(false)
      ->group("Hosts");
  app.add_option("-p,--ssh-port", cfg.ssh.port, "SSH port on all the hosts")
      ->transform(whole_number(1, 65535))
      ->group("SSH");
  app.add_option("-i,--ssh-identity-file", cfg.ssh.identity_file,
                 "File from which the identity (private key) is read")
      ->group("SSH");
  app.add_option("--start-timeout", job.start_timeout_s,
                 "Seconds to reach every host and start the ranks (default 30, or "
                 "$HOROVOD_START_TIMEOUT)")
      ->transform(whole_number(1, 86400))
      ->group("Job");
  app.add_option_function<std::string>(
         "--network-interfaces", [&raw](const std::string& v) { add_nics(raw, v); },
         "Network interfaces for communication, comma-separated (NCCL_SOCKET_IFNAME, "
         "HOROVOD_GLOO_IFACE)")
      ->allow_extra_args(false)
      ->group("Job");
  app.add_option_function<std::string>(
         "--network-interface", [&raw](const std::string& v) { add_nics(raw, v); },
         "One network interface (repeatable)")
      ->allow_extra_args(false)
      ->group("Job");
  app.add_option("--output-filename", cfg.output.output_dir,
                 "Also write each rank's output to DIR/rank.<rank>/stdout|stderr")
      ->group("Output");
  app.add_flag("--prefix-output-with-timestamp,--prefix-timestamp", cfg.output.timestamps,
               "Timestamp each line of output")
      ->group("Output");
  app.add_flag("--verbose", job.verbose, "Print extra messages");
  app.add_flag("--disable-cache", raw.accepted, "Accepted; ferry keeps no cache")->group("Job");
  app.add_flag("--gloo", raw.accepted, "Accepted: ranks get Horovod's gloo variables")
      ->group("Job");
  app.add_flag("--mpi", raw.mpi_controller,
               "Accepted: ferry starts the ranks itself (no mpirun underneath)")
      ->group("Job");
  app.add_option("-x", raw.exports,
                 "Export VAR or VAR=value to ranks (ferry; horovodrun forwards the whole "
                 "environment already)")
      ->allow_extra_args(false)
      ->group("Job");
  app.add_option("--wdir", job.wdir, "Working directory of the ranks (ferry)")
      ->check(not_empty())
      ->group("Job");
  app.add_flag("--oversubscribe", job.oversubscribe,
               "Allow more ranks than slots on a host (ferry)")
      ->group("Job");

  add_tunables_and_refusals(app, raw);
  add_elastic_options(app, cfg, raw);
  add_shared_options(app, cfg, raw);
  // Binding is ferry's: horovodrun has no such flags, so only the long forms.
  add_placement_options(app, cfg, raw, false);
}

Status horovodrun_refusal(const RawCli& raw) { return first_refusal(raw, refusals); }

Result<std::vector<std::string>> finish_horovodrun(FrontendConfig& cfg, RawCli& raw) {
  if (raw.mpi_controller)
    raw.notes.emplace_back(
        "--mpi: ferry starts the ranks itself and gives them Horovod's gloo "
        "and Open MPI variables; there is no mpirun underneath");
  if (Status st = finish_horovod_elastic(cfg, raw); !st) return st.error();
  auto env = horovod_tunables_env(raw.horovod, raw.warnings);
  if (!env) return env.error();
  cfg.job.horovod = true;
  if (!raw.nics.empty()) {
    std::string all;
    for (const auto& n : raw.nics) all += (all.empty() ? "" : ",") + n;
    cfg.job.network_interfaces = raw.nics;
    env->push_back("HOROVOD_GLOO_IFACE=" + raw.nics.front());
    env->push_back("NCCL_SOCKET_IFNAME=" + all);
  }
  return env;
}

}  // namespace ferry::cli_detail
