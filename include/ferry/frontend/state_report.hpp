#pragma once
/// \file
/// The state report of a running job (on SIGQUIT, at --timeout, after --stall-timeout): one
/// block per rank with its host, pid, scheduler state, recent CPU, the time since it last
/// printed, and its stack as its ferryd read it.

#include <string>
#include <vector>

#include "ferry/wire/messages.hpp"

namespace ferry {

/// One rank of the report.
struct StateRow {
  int rank = 0;
  std::string host;
  bool answered = false;       ///< its ferryd sent its state (else `missing` says why not)
  std::string missing;         ///< "ended", "no answer from its ferryd within 30 s", ...
  wire::RankState state;       ///< when answered
  double since_output_s = -1;  ///< seconds since it last printed (or started); <0 unknown
};

/// The report as whole lines, each led by "<program>: " but the stack lines: a title with
/// `why`, then every row in rank order.
std::string format_state_report(const std::string& program, const std::string& why,
                                std::vector<StateRow> rows);

}  // namespace ferry
