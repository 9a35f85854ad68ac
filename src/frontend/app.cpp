#include "ferry/frontend/app.hpp"

#include <signal.h>

#include "ferry/frontend/job.hpp"
#include "ferry/output/console_output.hpp"
#include "ferry/transport/local_launcher.hpp"
#include "ferry/transport/ssh_launcher.hpp"

namespace ferry {

int run_ferryrun(const FrontendConfig& cfg) {
  ::signal(SIGPIPE, SIG_IGN);
  asio::io_context io;
  OutputOptions out_opts = cfg.output;
  int world = cfg.job.np;
  if (world <= 0) {
    world = 0;
    for (const auto& h : cfg.job.hosts) world += h.slots;
  }
  out_opts.world_size = world;
  ConsoleOutput console(out_opts);
  Diagnostics diag(&console, 2, cfg.job.verbose);
  diag.set_writer([&console](const std::string& line) {
    console.print_line(StreamId::kStderr, line);
  });

  SshOptions ssh;
  ssh.config_file = cfg.ssh.config_file;
  ssh.identity_file = cfg.ssh.identity_file;
  ssh.default_port = cfg.ssh.port;
  ssh.default_user = cfg.ssh.user;
  ssh.accept_new_host_keys = cfg.ssh.accept_new;
  ssh.connect_timeout_s = cfg.job.start_timeout_s;
  ssh.keepalive_s = cfg.ssh.heartbeat_s;
  ssh.verbose = cfg.job.verbose;
  ssh.log = [&diag](const std::string& line) { diag.verbose(line); };
  Job* job_ptr = nullptr;
  ssh.on_diag = [&job_ptr](const std::string& host, const std::string& line) {
    if (job_ptr) job_ptr->daemon_stderr(host, line);
  };
  LocalLauncher local(io);
  SshLauncher remote(io, ssh);
  JobOptions job_opts = cfg.job;
  job_opts.heartbeat_s = cfg.ssh.heartbeat_s;
  Job job(io, std::move(job_opts), Launchers{local, remote}, console, diag);
  job_ptr = &job;
  int status = job.run();
  console.flush();
  return status;
}

}  // namespace ferry
