// ferry: the user's view of the jobs ferryrun kept (--detach, --nohup; see
// include/ferry/session/ferry_tool.hpp) and of the warm pools (up, down, pools; app.hpp).
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "ferry/app/app.hpp"
#include "ferry/common/standard_fds.hpp"
#include "ferry/session/ferry_tool.hpp"

int main(int argc, char** argv) {
  ferry::reopen_closed_standard_fds();
  try {
    std::vector<std::string> args(argv, argv + argc);
    if (args.size() > 1 && (args[1] == "up" || args[1] == "down" || args[1] == "pools"))
      return ferry::run_pool_tool(args);
    return ferry::run_ferry_tool(args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ferry: internal error: %s\n", e.what());
    return 2;
  }
}
