// ferryd: the per-host daemon. Started by ferryrun as `ferryd --stdio` over SSH (or forked
// directly for the local host); speaks ferry's framed protocol on stdin/stdout.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "ferry/daemon/daemon.hpp"
#include "ferry/wire/messages.hpp"

int main(int argc, char** argv) {
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
  try {
    asio::io_context io;
    ferry::Daemon daemon(io, ferry::DaemonOptions{in, out});
    daemon.start();
    io.run();
    return daemon.exit_code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ferryd: %s\n", e.what());
    return 2;
  }
}
