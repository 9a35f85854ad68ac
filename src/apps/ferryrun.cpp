// ferryrun: the front end. Parses the command line and runs the job; everything else is
// in ferry_core.
#include <cstdio>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "ferry/app/app.hpp"
#include "ferry/cli/ferryrun_cli.hpp"
#include "ferry/cli/personality.hpp"
#include "ferry/common/standard_fds.hpp"

int main(int argc, char** argv) {
  // Before anything opens an fd: a closed stdin, stdout or stderr must not be taken by
  // the loop's eventfd or a host's socket.
  ferry::reopen_closed_standard_fds();
  const std::string program = ferry::program_name(argc > 0 ? argv[0] : "ferryrun");
  try {
    std::vector<std::string> args(argv, argv + argc);
    auto parsed = ferry::parse_ferryrun_args(args);
    if (!parsed.config) return parsed.exit_code;
    return ferry::run_ferryrun(std::move(*parsed.config));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: internal error: %s\n", program.c_str(), e.what());
    return 2;
  }
}
