#pragma once
/// \file
/// How ferryrun words a failed preflight of the data network: one line naming both hosts, the
/// address and port, the interfaces, what went wrong and its likely cause.

#include <cstdint>
#include <string>

namespace ferry {

/// One host that could not reach rank 0's host (or rank 0's host that could not listen). With
/// `peer`: one host that could not reach another's own address, where that host's ranks listen
/// for their peers (gloo, NCCL, MPI), or could not listen there itself.
struct PreflightFailure {
  bool listening = false;        ///< `host` could not listen (rank 0's, or with `peer` its own)
  bool peer = false;             ///< the second round: a host's own address, not MASTER_ADDR
  std::string host;              ///< the host that failed
  std::string host_interface;    ///< the interface its route to the address leaves by
  std::string target;            ///< rank 0's host (with `peer`: the host listening)
  std::string target_interface;  ///< the interface the address is on there
  std::string address;
  uint16_t port = 0;
  std::string error;   ///< what the host said
  std::string reason;  ///< its errno name (ETIMEDOUT, ...)
};

/// The likely cause of `f`, in words, or "" when nothing is likely.
std::string preflight_cause(const PreflightFailure& f);

/// The one line (without the program's prefix) that says `f`.
std::string preflight_failure_line(const PreflightFailure& f);

}  // namespace ferry
