#pragma once
/// \file
/// What one job is, once the command line, hostfiles and job file are read.

#include <string>
#include <vector>

#include "ferry/hosts/host_list.hpp"

namespace ferry {

/// Everything a job needs once the command line is parsed.
struct JobOptions {
  HostList hosts;
  int np = 0;                        ///< 0: one rank per slot
  bool oversubscribe = false;
  std::vector<std::string> command;
  std::string wdir;                  ///< where ranks start
  bool wdir_explicit = false;        ///< --wdir given: missing on a host is an error
  std::vector<std::string> exports;  ///< resolved "K=V"
  int start_timeout_s = 30;
  double kill_grace_s = 5.0;
  bool verbose = false;
  std::string ferryd_path;           ///< for hosts whose entry names none
  int stdin_rank = 0;                ///< -1: ranks get /dev/null
  int stdin_fd = 0;                  ///< where ferryrun reads the stdin it forwards
};

}  // namespace ferry
