// ferryd: the per-host daemon. Started by ferryrun as `ferryd --stdio` over SSH (or forked
// directly for the local host); speaks ferry's framed protocol on stdin/stdout.
#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "ferry/daemon/daemon.hpp"
#include "ferry/wire/messages.hpp"

namespace {

int run(int argc, char** argv) {
  CLI::App app{"ferryd: ferry's per-host daemon. ferryrun starts it; you do not need to."};
  bool stdio = false;
  app.add_flag("--stdio", stdio, "Serve one job over stdin/stdout (how ferryrun starts it)");
  app.set_version_flag("--version", std::string("ferryd ") + FERRY_VERSION + " (protocol " +
                                        std::to_string(ferry::wire::kProtocolVersion) + ")");
  CLI11_PARSE(app, argc, argv);
  if (!stdio) {
    std::fprintf(stderr, "ferryd: nothing to do; ferryrun starts ferryd with --stdio\n");
    return 2;
  }
  ::signal(SIGPIPE, SIG_IGN);
  // Keep the protocol streams on private fds and point 0/1 at /dev/null, so nothing a
  // library prints can corrupt the frames.
  int in = ::fcntl(0, F_DUPFD_CLOEXEC, 3);
  int out = ::fcntl(1, F_DUPFD_CLOEXEC, 3);
  int null = ::open("/dev/null", O_RDWR);
  if (in < 0 || out < 0 || null < 0) {
    std::perror("ferryd: fcntl");
    return 2;
  }
  ::dup2(null, 0);
  ::dup2(null, 1);
  ::close(null);
  asio::io_context io;
  ferry::Daemon daemon(io, ferry::DaemonOptions{in, out});
  // ferryd reads only the CPU topology: keep hwloc from loading its PCI, GL, OpenCL and
  // libxml plugins (and X11 and ICU with them), ~1.5 MiB of every ferryd and time at its
  // start. Only for ferryd's own discovery, in start(): the ranks see the user's value.
  const char* kPluginsVar = "HWLOC_PLUGINS_BLACKLIST";
  const bool own_blacklist = ::getenv(kPluginsVar) == nullptr;
  if (own_blacklist) ::setenv(kPluginsVar, "hwloc_pci,hwloc_gl,hwloc_opencl,hwloc_xml_libxml", 1);
  daemon.start();
  if (own_blacklist) ::unsetenv(kPluginsVar);
  io.run();
  return daemon.exit_code();
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ferryd: %s\n", e.what());
    return 2;
  }
}
