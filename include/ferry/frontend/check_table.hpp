#pragma once
/// \file
/// `ferryrun --check`'s table: one row per host of the job (reachable, ferryd's release, cores
/// and NUMA nodes, accelerators found against the host's slots, the chosen interface and its
/// speed, the preflight's result, the versions of python3, torch, NCCL, CUDA and MPI), values
/// that differ between hosts marked with `*`.

#include <string>
#include <vector>

#include "ferry/wire/messages.hpp"

namespace ferry {

struct CheckRow {
  std::string host;
  bool reachable = false;
  std::string why;  ///< why not reachable, or why no report came
  bool reported = false;
  wire::CheckReport report;
  int slots = 0;
  std::string interface;  ///< chosen for the frameworks, "" none
  std::string speed;      ///< "10000 Mb/s", "" unknown
  std::string preflight;  ///< "ok", "failed", "skipped"
};

/// The table as lines, then one line per unreachable host saying why, then a legend when a
/// value is marked.
std::string format_check_table(const std::vector<CheckRow>& rows);

/// Whether the job could start: every host reachable and reporting, no failed preflight.
bool check_passed(const std::vector<CheckRow>& rows);

}  // namespace ferry
