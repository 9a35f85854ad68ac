#include "ferry/app/app.hpp"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>

#include "ferry/frontend/job.hpp"
#include "ferry/output/console_output.hpp"
#include "ferry/plan/placement.hpp"
#include "ferry/transport/local_launcher.hpp"
#include "ferry/transport/slurm_launcher.hpp"
#include "ferry/transport/ssh_launcher.hpp"

namespace ferry {

int ranks_to_launch(const JobOptions& job) {
  // The job places the ranks again itself; placing is cheap and has no side effects, and
  // the console must exist (with its file names fixed) before the job starts.
  auto placed = place_ranks(job.hosts, job.np, job.oversubscribe, job.placement);
  return placed ? placed->world_size : 0;
}

OutputOptions console_options(const FrontendConfig& cfg, int world_size) {
  OutputOptions out = cfg.output;
  out.world_size = std::max(world_size, 1);
  out.program = cfg.program;
  return out;
}

int run_ferryrun(const FrontendConfig& cfg) {
  ::signal(SIGPIPE, SIG_IGN);
  asio::io_context io;
  const int world = ranks_to_launch(cfg.job);
  ConsoleOutput console(console_options(cfg, world));
  console.write_behind(io);  // a console that stops reading must not stop the loop
  Diagnostics diag(&console, 2, cfg.job.verbose, cfg.program);
  // "connected 87/128" while hosts connect: on a terminal, and not mixed with --verbose.
  if (::isatty(2) && !cfg.job.verbose) diag.enable_progress();
  diag.set_writer(
      [&console](const std::string& line) { console.print_line(StreamId::kStderr, line); });
  console.set_warn([&diag](const std::string& message) { diag.warn(message); });
  // The command line can only check --stdin against -np; here every placement is known.
  if (world > 0 && cfg.job.stdin_rank >= world) {
    diag.error("--stdin " + std::to_string(cfg.job.stdin_rank) + ": there is no such rank (" +
               std::to_string(world) + " ranks, 0-" + std::to_string(world - 1) + ")");
    return 2;
  }

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
  // FERRY_SSH_IO_THREADS=N runs the SSH sessions on N threads of their own, =-1 on the
  // loop; unset, it depends on the CPUs (SshOptions::io_threads).
  if (const char* n = std::getenv("FERRY_SSH_IO_THREADS"); n && *n) {
    char* end = nullptr;
    const long v = std::strtol(n, &end, 10);
    if (*end == '\0') ssh.io_threads = static_cast<int>(std::clamp(v, -1L, 64L));
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
  Launcher& far = cfg.launch == LaunchWith::kSlurm   ? static_cast<Launcher&>(slurm)
                  : cfg.launch == LaunchWith::kLocal ? static_cast<Launcher&>(local)
                                                     : remote;
  Launchers launchers{near, far};
  JobOptions job_opts = cfg.job;
  // FERRY_OUTPUT_ROUTE=ssh keeps every host's output on its SSH channel.
  if (const char* r = std::getenv("FERRY_OUTPUT_ROUTE"); r && std::string_view(r) == "ssh")
    job_opts.direct_output = false;
  job_opts.ssh_port = cfg.ssh.port;
  job_opts.ssh_user = cfg.ssh.user;
  if (cfg.launch == LaunchWith::kSlurm) job_opts.remote_via = "srun";
  Job job(io, std::move(job_opts), launchers, console, diag);
  int status = job.run();
  console.flush();
  return status;
}

}  // namespace ferry
