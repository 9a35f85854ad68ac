// ferry: the user's view of the jobs ferryrun kept (--detach, --nohup); see
// include/ferry/session/ferry_tool.hpp.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "ferry/common/standard_fds.hpp"
#include "ferry/session/ferry_tool.hpp"

int main(int argc, char** argv) {
  ferry::reopen_closed_standard_fds();
  try {
    return ferry::run_ferry_tool(std::vector<std::string>(argv, argv + argc));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ferry: internal error: %s\n", e.what());
    return 2;
  }
}
