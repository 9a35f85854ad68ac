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
/// `why`, every row in rank order, then where the ranks are in short (the ranks grouped by
/// rank_whereabouts, with a hint for a pattern whose cause is known).
std::string format_state_report(const std::string& program, const std::string& why,
                                std::vector<StateRow> rows);

/// Where a rank is, in a few words read from its stack, equal for ranks at the same point:
/// the MPI call it is in (native frames), the library function its Python code is in, the
/// innermost frame of the program itself ("train.py:31 in main"); "MPI_Finalize at Python's
/// exit" for an interpreter past its script. A rank that did not answer: why not.
std::string rank_whereabouts(const StateRow& row);

}  // namespace ferry
