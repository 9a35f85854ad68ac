#include "ferry/app/app.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>

#include "ferry/common/settings.hpp"
#include "ferry/frontend/elastic_discovery.hpp"
#include "ferry/frontend/host_spec.hpp"
#include "ferry/frontend/job.hpp"
#include "ferry/monitor/view_board.hpp"
#include "ferry/output/console_output.hpp"
#include "ferry/output/held_output.hpp"
#include "ferry/output/output_dir.hpp"
#include "ferry/plan/limits.hpp"
#include "ferry/plan/placement.hpp"
#include "ferry/pool/pool_dir.hpp"
#include "ferry/pool/pool_launcher.hpp"
#include "ferry/session/job_session.hpp"
#include "ferry/sync/tree_reader.hpp"
#include "ferry/transport/local_launcher.hpp"
#include "ferry/transport/slurm_launcher.hpp"
#include "ferry/transport/ssh_launcher.hpp"
#include "ferry/wire/messages.hpp"

namespace ferry {

namespace {

// Cores per rank that this machine cannot give, when every host is this machine (a remote
// host's cores are known only to its ferryd, which reports the rank). "" when possible.
std::string impossible_cpus_per_rank(const FrontendConfig& cfg) {
  const BindingOptions& b = cfg.job.binding;
  const int asked = std::max(b.pe, b.cpus_per_rank);
  if (asked <= 0) return "";
  for (const auto& h : cfg.job.hosts)
    if (cfg.launch != LaunchWith::kLocal &&
        (!is_local_host(h.name) || h.port != 0 || !h.user.empty()))
      return "";
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (::sched_getaffinity(0, sizeof allowed, &allowed) != 0) return "";
  const int cpus = CPU_COUNT(&allowed);
  if (asked <= cpus) return "";
  return std::string(b.pe > b.cpus_per_rank ? "--map-by ...:PE=" : "--cpus-per-rank ") +
         std::to_string(asked) + ": this machine has " + std::to_string(cpus) +
         " CPU(s) for the ranks";
}

// horovodrun's elastic mode with a discovery script: the script's first listing gives the hosts,
// -np (a worker on every slot) and, with --launcher auto, the launcher. 0, or the exit status of
// a job that cannot start (its reason said in one line).
int discover_hosts(FrontendConfig& cfg) {
  if (cfg.job.elastic.discovery_script.empty()) return 0;
  auto note = discover_first_hosts(cfg.job, [&cfg](const std::string& line) {
    std::fprintf(stderr, "%s: %s\n", cfg.program.c_str(), line.c_str());
  });
  if (!note) {
    std::fprintf(stderr, "%s: %s\n", cfg.program.c_str(), note.error().message.c_str());
    return 2;
  }
  if (cfg.job.verbose) std::fprintf(stderr, "%s: note: %s\n", cfg.program.c_str(), note->c_str());
  if (cfg.launch_by_hosts) choose_launcher_by_hosts(cfg);
  return 0;
}

// What can be known to fail before any host is reached: one line each, exit status 2. The
// ranks are placed here, once: the console and the job take this placement.
int check_before_start(const FrontendConfig& cfg, std::optional<Placement>& placement) {
  auto refuse = [&](const std::string& why) {
    std::fprintf(stderr, "%s: %s\n", cfg.program.c_str(), why.c_str());
    return 2;
  };
  const JobOptions& job = cfg.job;
  auto placed = place_job(job);
  if (!placed) return refuse(placed.error().message);
  if (Status st = check_job_size(*placed); !st) return refuse(st.error().message);
  // --stdin against the ranks as placed (-np, -N, slots, a job file: only this knows them).
  if (const int world = placed->world_size; job.stdin_rank >= world)
    return refuse("--stdin " + std::to_string(job.stdin_rank) + ": there is no such rank (" +
                  std::to_string(world) + " ranks, 0-" + std::to_string(world - 1) + ")");
  if (std::string why = impossible_cpus_per_rank(cfg); !why.empty()) return refuse(why);
  if (!cfg.output.output_dir.empty())
    if (Status st = prepare_output_dir(cfg.output.output_dir); !st)
      return refuse("--output-filename " + st.error().message);
  placement = std::move(*placed);
  return 0;
}

// ferry's settings from the environment (common/settings.hpp): FERRY_SSH_IO_THREADS and
// FERRY_OUTPUT_ROUTE; a value ferry cannot use is ignored, with a warning.
void read_environment(SshOptions& ssh, JobOptions& job, Diagnostics& diag) {
  std::vector<std::string> warnings;
  const Settings s = read_settings([](const char* name) { return std::getenv(name); },
                                   SettingsOf::kFerryrun, warnings);
  for (const auto& w : warnings) diag.warn(w);
  if (s.ssh_io_threads) ssh.io_threads = *s.ssh_io_threads;
  if (s.output_on_ssh) job.direct_output = false;
}

// The folder of ferryrun's executable (ferryd and libexec/ are found from it).
std::string program_dir() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

// What --ship-ferryd sends. A file ferryrun cannot read fails the job with `always`; with
// `auto` it is a warning (hosts that have ferryd still run), and nothing is shipped.
std::optional<std::shared_ptr<const ShipPlan>> ship_plan(const FrontendConfig& cfg,
                                                         Diagnostics& diag) {
  auto mode = parse_ship_mode(cfg.ship_ferryd);
  if (!mode) {
    diag.error("--ship-ferryd " + mode.error().message);
    return std::nullopt;
  }
  auto plan = load_ship_plan(*mode, static_cast<int>(wire::kProtocolVersion), cfg.ferryd_dir,
                             program_dir());
  if (plan) {
    plan->greeting = wire::hello_greeting();
    plan->greeting_offset = wire::kHelloGreetingOffset;
    for (const auto& f : plan->files)
      diag.verbose("ship-ferryd " + cfg.ship_ferryd + ": " + f.arch + " " + f.source + " (" +
                   std::to_string(f.size) + " bytes, sha256 " + f.sha256.substr(0, 16) + "...)");
    return std::make_shared<const ShipPlan>(std::move(*plan));
  }
  if (*mode == ShipMode::kAlways) {
    diag.error(plan.error().message);
    return std::nullopt;
  }
  diag.warn(plan.error().message + "; no ferryd will be shipped (--ship-ferryd auto)");
  return std::shared_ptr<const ShipPlan>();
}

// The job itself: the loop, console, launchers and Job; returns ferryrun's status once the
// console has written everything (its writing threads end with it), and in `console_error`
// the errno of the console's first failed write (0: none).
int run_job(FrontendConfig& cfg, std::optional<Placement> placed, int& console_error);

// The job's journal and record (--detach, --nohup): the record names its hosts, ranks and
// command line; --detach returns here only in the detached child.
Result<std::unique_ptr<JobSession>> start_session(const FrontendConfig& cfg,
                                                  const Placement& placed) {
  auto jobs_dir = default_jobs_directory();
  if (!jobs_dir) return jobs_dir.error();
  SessionOptions so;
  so.jobs_dir = *jobs_dir;
  so.journal_max = cfg.journal_max;
  so.program = cfg.program;
  for (const HostPlan& h : placed.hosts) so.record.hosts.push_back(h.label);
  so.record.ranks = placed.world_size;
  so.record.command = cfg.command_line;
  so.board = cfg.job.board;
  auto s = cfg.detach ? JobSession::detach(std::move(so)) : JobSession::keep(std::move(so));
  if (s && cfg.nohup)
    std::fprintf(stderr,
                 "%s: job %s: survives this terminal's hangup; its output is also in the "
                 "journal ('ferry attach %s')\n",
                 cfg.program.c_str(), (*s)->id().c_str(), (*s)->id().c_str());
  return s;
}

}  // namespace

OutputOptions console_options(const FrontendConfig& cfg, const Placement& placed) {
  OutputOptions out = cfg.output;
  out.world_size = std::max(placed.world_size, 1);
  out.program = cfg.program;
  if (out.tag == TagStyle::kHost) {
    out.rank_hosts.assign(static_cast<std::size_t>(placed.world_size), "");
    for (const HostPlan& h : placed.hosts)
      for (const RankSlot& r : h.ranks) out.rank_hosts[static_cast<std::size_t>(r.rank)] = h.label;
  }
  return out;
}

int run_ferryrun(FrontendConfig cfg) {
  ::signal(SIGPIPE, SIG_IGN);
  if (int bad = discover_hosts(cfg); bad != 0) return bad;
  std::optional<Placement> placed;
  if (int bad = check_before_start(cfg, placed); bad != 0) return bad;
  // --detach forks here, before the loop or any thread exists; the parent does not return.
  std::unique_ptr<JobSession> session;
  if (cfg.detach || cfg.nohup) {
    cfg.job.board = std::make_shared<ViewBoard>();  // `ferry top ID`
    auto s = start_session(cfg, *placed);
    if (!s) {
      std::fprintf(stderr, "%s: %s\n", cfg.program.c_str(), s.error().message.c_str());
      return 2;
    }
    session = std::move(*s);
    cfg.job.on_all_started = [&session] { session->all_started(); };
  }
  int console_error = 0;
  const int status = run_job(cfg, std::move(placed), console_error);
  // The console is gone by now, its writing threads done: the journal has every byte.
  if (session) session->ended(status, console_error);
  return status;
}

namespace {

// A --sync tree through a warm pool: the pool may know it unchanged since the last launch.
void ask_pool_about_tree(JobOptions& opts, const PoolRoute& route) {
  if (!opts.sync_request) return;
  auto request = std::make_shared<SyncRequest>(*opts.sync_request);
  request->rules.watch_socket = route.dir + "/" + kPoolSocketName;
  opts.sync_request = std::move(request);
}

// The warm pool the job goes through (`ferry up`): --pool NAME, else the running pool that
// serves the most of its hosts; none with --no-pool, outside SSH, or when no pool serves any.
// Error (one line): --pool names a pool that does not run.
Result<std::optional<PoolRoute>> job_pool(const FrontendConfig& cfg) {
  if (cfg.no_pool && !cfg.pool.empty())
    return make_error("--pool " + cfg.pool + " and --no-pool: choose one");
  if (cfg.no_pool || cfg.launch != LaunchWith::kSsh) return std::optional<PoolRoute>();
  if (!cfg.pool.empty())
    if (Status st = check_pool_name(cfg.pool); !st)
      return make_error("--pool: " + st.error().message);
  // Only looked at: a job that finds no pool leaves no directory behind.
  auto dir = existing_pools_directory();
  if (!dir) {
    if (cfg.pool.empty()) return std::optional<PoolRoute>();
    return make_error("--pool " + cfg.pool + ": " + dir.error().message);
  }
  if (!*dir) {
    if (cfg.pool.empty()) return std::optional<PoolRoute>();
    return make_error("--pool " + cfg.pool +
                      ": no such pool runs (start it with 'ferry up --name " + cfg.pool + " ...')");
  }
  std::vector<std::string> keys;
  for (const HostEntry& h : cfg.job.hosts)
    keys.push_back(pool_host_key(h, cfg.ssh.port, cfg.ssh.user));
  auto route = find_pool(**dir, cfg.pool, keys);
  if (!route || !*route) return route;
  (*route)->default_port = cfg.ssh.port;
  (*route)->default_user = cfg.ssh.user;
  return route;
}

int run_job(FrontendConfig& cfg, std::optional<Placement> placed, int& console_error) {
  asio::io_context io;
  ConsoleOutput console(console_options(cfg, *placed));
  console.write_behind(io);  // a console that stops reading must not stop the loop
  // --top covers the terminal: the console's lines wait behind it (held) while it is up.
  HeldOutput held(console, [&console](StreamId stream, const std::string& line) {
    console.print_line(stream, line);
  });
  OutputSink& sink = cfg.job.top ? static_cast<OutputSink&>(held) : console;
  Diagnostics diag(&sink, 2, cfg.job.verbose, cfg.program);
  // "connected 87/128" while hosts connect: on a terminal, and not mixed with --verbose.
  if (::isatty(2) && !cfg.job.verbose) diag.enable_progress();
  diag.set_writer([&held](const std::string& line) { held.print_line(StreamId::kStderr, line); });
  console.set_warn([&diag](const std::string& message) { diag.warn(message); });

  SshOptions ssh;
  ssh.config_file = cfg.ssh.config_file;
  ssh.identity_file = cfg.ssh.identity_file;
  ssh.default_port = cfg.ssh.port;
  ssh.default_user = cfg.ssh.user;
  ssh.accept_new_host_keys = cfg.ssh.accept_new;
  ssh.connect_timeout_s = cfg.job.start_timeout_s;
  ssh.keepalive_s = cfg.job.heartbeat_s;
  ssh.verbose = cfg.job.verbose;
  ssh.log = [&diag](const std::string& line) { diag.verbose(line); };
  JobOptions job_opts = cfg.job;
  job_opts.hold_console = [&held, &cfg](bool hold) {
    if (hold)
      held.hold();
    else
      held.release(cfg.program);
  };
  read_environment(ssh, job_opts, diag);
  if (cfg.launch == LaunchWith::kSsh) {
    auto plan = ship_plan(cfg, diag);
    if (!plan) return 2;
    ssh.ship = std::move(*plan);
  }
  LocalLauncher local(io);
  SshLauncher remote(io, ssh);
  SlurmOptions so;
  so.verbose = cfg.job.verbose;
  so.survive_lost_host = cfg.job.min_hosts > 0 || cfg.job.min_ranks > 0 ||
                         cfg.job.max_restarts > 0 || cfg.job.elastic.on();
  so.log = [&diag](const std::string& line) { diag.raw(line + "\n"); };
  SlurmLauncher slurm(io, so);
  diag.verbose(std::string("launcher: ") +
               (cfg.launch == LaunchWith::kSlurm   ? "slurm"
                : cfg.launch == LaunchWith::kLocal ? "local"
                                                   : "ssh") +
               " (" + cfg.launch_reason + ")");
  // Slurm starts every host's ferryd, this machine's too (inside the step's accounting).
  Launcher& near = cfg.launch == LaunchWith::kSlurm ? static_cast<Launcher&>(slurm) : local;
  auto route = job_pool(cfg);
  if (!route) {
    diag.error(route.error().message);
    return 2;
  }
  std::optional<PoolLauncher> pooled;
  if (*route) {
    diag.verbose("warm pool: " + (*route)->name + " (" + (*route)->dir + ")");
    job_opts.remote_via = "warm pool " + (*route)->name + " or SSH";
    ask_pool_about_tree(job_opts, **route);
    pooled.emplace(io, std::move(**route), remote, "ferryrun-" + std::to_string(::getpid()),
                   [&diag](const std::string& line) { diag.verbose(line); });
  }
  Launcher& far = cfg.launch == LaunchWith::kSlurm   ? static_cast<Launcher&>(slurm)
                  : cfg.launch == LaunchWith::kLocal ? static_cast<Launcher&>(local)
                  : pooled                           ? static_cast<Launcher&>(*pooled)
                                                     : remote;
  Launchers launchers{near, far};
  job_opts.ssh_port = cfg.ssh.port;
  job_opts.ssh_user = cfg.ssh.user;
  if (cfg.launch == LaunchWith::kSlurm) job_opts.remote_via = "srun";
  Job job(io, std::move(job_opts), launchers, sink, diag, std::move(placed));
  const int status = job.run();
  console.flush();
  console_error = console.write_error();
  return status;
}

}  // namespace

}  // namespace ferry
