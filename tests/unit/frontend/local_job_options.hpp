#pragma once
// The options of a job on this machine (the real ferryd, no SSH), shared by the local job tests.

#include <string>
#include <utility>
#include <vector>

#include "ferry/frontend/job_options.hpp"

namespace ferry {

inline JobOptions local_job(int np, std::vector<std::string> cmd) {
  JobOptions o;
  HostEntry h;
  h.name = "localhost";
  h.slots = np;
  o.hosts = {h};
  o.np = np;
  o.command = std::move(cmd);
  o.wdir = "/tmp";
  o.kill_grace_s = 1;
  return o;
}

}  // namespace ferry
