// ferryd: the per-host daemon. Started by ferryrun as `ferryd --stdio` over SSH (or forked
// directly for the local host), speaking ferry's framed protocol on stdin/stdout; or by srun
// as `ferryd --connect`, speaking it on a TCP connection back to ferryrun; or by a warm pool
// (`ferry up`) as `ferryd --pool`, which has each job's ferryd forked by its `ferryd
// --fork-server` (or, without one, starts a `ferryd --stdio` for it).
#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/binding/topology.hpp"
#include "ferry/common/build_info.hpp"
#include "ferry/common/settings.hpp"
#include "ferry/common/standard_fds.hpp"
#include "ferry/daemon/daemon.hpp"
#include "ferry/daemon/pmix_server.hpp"
#include "ferry/hosts/slurm.hpp"
#include "ferry/pool/fork_server.hpp"
#include "ferry/pool/host_side.hpp"
#include "ferry/transport/connect_back.hpp"
#include "ferry/wire/messages.hpp"

namespace {

// A ferryd started by srun: its ranks must not inherit the step's identity (task N of a
// one-task-per-node step), nor its I/O and binding settings.
void drop_slurm_step_variables() {
  std::vector<std::string> names;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    std::string_view name = kv.substr(0, kv.find('='));
    if (ferry::is_slurm_step_variable(name)) names.emplace_back(name);
  }
  for (const auto& n : names) ::unsetenv(n.c_str());
}

// --connect: the protocol's fds are one TCP connection back to ferryrun.
bool connect_to_ferryrun(int& in, int& out) {
  // The step's daemon (slurmstepd) is our parent: when it dies (the node is going down, the
  // step is being killed), stop the ranks as when ferryrun is lost.
  const pid_t parent = ::getppid();
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != parent) return false;
  auto target = ferry::connect_target_from_environment();
  if (!target) {
    std::fprintf(stderr, "ferryd: --connect: %s\n", target.error().message.c_str());
    return false;
  }
  ::unsetenv(ferry::kConnectPortVar);
  ::unsetenv(ferry::kConnectAddrsVar);
  auto fd = ferry::connect_back(*target);
  drop_slurm_step_variables();
  if (!fd) {
    std::fprintf(stderr, "ferryd on %s: %s\n", target->node.c_str(), fd.error().message.c_str());
    return false;
  }
  in = fd->release();
  out = ::fcntl(in, F_DUPFD_CLOEXEC, 3);
  return out >= 0;
}

// ferryd reads only the CPU topology: keep hwloc from loading its PCI, GL, OpenCL and libxml
// plugins (and X11 and ICU with them), ~1.5 MiB of every ferryd and time at its start. Only
// for ferryd's own discovery: the ranks see the user's value.
class OwnHwlocSettings {
 public:
  OwnHwlocSettings() {
    if (own_blacklist_)
      ::setenv(kPluginsVar, "hwloc_pci,hwloc_gl,hwloc_opencl,hwloc_xml_libxml", 1);
    // hwloc is linked into ferryd (cmake/portable.cmake): a host's hwloc plugins were built
    // for its shared libhwloc, a second copy, and must not be loaded at all.
    if (own_path_) ::setenv(kPathVar, "/nonexistent/ferryd-loads-no-hwloc-plugins", 1);
  }
  ~OwnHwlocSettings() {
    if (own_blacklist_) ::unsetenv(kPluginsVar);
    if (own_path_) ::unsetenv(kPathVar);
  }
  OwnHwlocSettings(const OwnHwlocSettings&) = delete;
  OwnHwlocSettings& operator=(const OwnHwlocSettings&) = delete;

 private:
  static constexpr const char* kPluginsVar = "HWLOC_PLUGINS_BLACKLIST";
  static constexpr const char* kPathVar = "HWLOC_PLUGINS_PATH";
  const bool own_blacklist_ = ::getenv(kPluginsVar) == nullptr;
  const bool own_path_ = ::getenv(kPathVar) == nullptr;
};

// One job's ferryd on the protocol's fds (--stdio, --connect, and each child of the fork
// server).
int serve_job(int in, int out) {
  asio::io_context io;
  ferry::DaemonOptions opts;
  opts.in_fd = in;
  opts.out_fd = out;
  opts.subreaper = true;
  std::vector<std::string> warnings;
  opts.settings = ferry::read_settings([](const char* name) { return ::getenv(name); },
                                       ferry::SettingsOf::kFerryd, warnings);
  for (const auto& w : warnings) std::fprintf(stderr, "ferryd: warning: %s\n", w.c_str());
  ferry::Daemon daemon(io, opts);
  {
    OwnHwlocSettings own;
    daemon.start();
  }
  io.run();
  return daemon.exit_code();
}

int run(int argc, char** argv) {
  CLI::App app{"ferryd: ferry's per-host daemon. ferryrun starts it; you do not need to.",
               "ferryd"};
  bool stdio = false, connect = false, pool = false, fork_server = false;
  app.add_flag("--stdio", stdio, "Serve one job over stdin/stdout (how ferryrun starts it)");
  app.add_flag("--connect", connect,
               "Serve one job over a connection back to ferryrun (how ferryrun's Slurm "
               "launcher starts it with srun; address, port and secret in the environment)");
  app.add_flag("--pool", pool,
               "Serve a warm pool's jobs over stdin/stdout, one ferryd --stdio each (how "
               "'ferry up' starts it)");
  app.add_flag("--fork-server", fork_server,
               "Fork a warm pool's jobs' ferryds on request, from one prepared process (how "
               "ferryd --pool starts it)");
  app.set_version_flag("--version", "ferryd " + ferry::version_text() + " (protocol " +
                                        std::to_string(ferry::wire::kProtocolVersion) + ")");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::fprintf(stderr, "ferryd: %s (ferryrun starts ferryd with --stdio)\n", e.what());
    return 2;
  }
  if (!stdio && !connect && !pool && !fork_server) {
    std::fprintf(stderr, "ferryd: nothing to do; ferryrun starts ferryd with --stdio\n");
    return 2;
  }
  ::signal(SIGPIPE, SIG_IGN);
  // Keep the protocol streams on private fds and point 0/1 at /dev/null, so nothing a
  // library prints can corrupt the frames.
  int in = -1, out = -1;
  if (connect) {
    if (!connect_to_ferryrun(in, out)) return 1;
  } else {
    in = ::fcntl(0, F_DUPFD_CLOEXEC, 3);
    out = ::fcntl(1, F_DUPFD_CLOEXEC, 3);
  }
  int null = ::open("/dev/null", O_RDWR);
  if (in < 0 || out < 0 || null < 0) {
    std::perror("ferryd: fcntl");
    return 2;
  }
  ::dup2(null, 0);
  ::dup2(null, 1);
  ::close(null);
  if (pool) {
    char exe[4096];
    const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
      std::perror("ferryd: /proc/self/exe");
      return 2;
    }
    return ferry::run_pool_host(in, out, std::string(exe, static_cast<size_t>(n)));
  }
  if (fork_server) {
    ::close(out);  // the control socket is `in`
    ferry::ForkServerHooks hooks;
    hooks.prepare = [] {
      OwnHwlocSettings own;
      ferry::Topology::preload_system();
    };
    hooks.serve = [](int job_in, int job_out) {
      const int code = serve_job(job_in, job_out);
      if (ferry::PmixServer::finalize_left_running()) std::fflush(nullptr);
      return code;
    };
    return ferry::run_fork_server(in, hooks, argv);
  }
  // Started through /proc/self/exe (a pool's ferryd exec'd without its fork server): `ps`
  // and `top` would call it "exe".
  char comm[16] = {};
  if (::prctl(PR_GET_NAME, comm) == 0 && std::string_view(comm) == "exe")
    ::prctl(PR_SET_NAME, "ferryd");
  return serve_job(in, out);
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything opens an fd: the protocol's dups, the loop's eventfd and ranks' pipes
  // must not land on a closed 0, 1 or 2 (and the log on fd 2 must go somewhere harmless).
  ferry::reopen_closed_standard_fds();
  try {
    const int code = run(argc, argv);
    // libpmix's finalize did not return: its threads may still use what exit() would destroy.
    if (ferry::PmixServer::finalize_left_running()) {
      std::fflush(nullptr);
      ::_exit(code);
    }
    return code;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ferryd: %s\n", e.what());
    return 2;
  }
}
