#include "ferry/frontend/failure_report.hpp"

#include <cstdio>
#include <cstring>

namespace ferry {
namespace {

constexpr const char* kRule =
    "------------------------------------------------"
    "--------------------------\n";

// "rank 1 on host node2 (local rank 0, pid 1001)"
std::string rank_where(const RankWhere& w) {
  return "rank " + std::to_string(w.rank) + " on host " + w.host + " (local rank " +
         std::to_string(w.local_rank) + (w.pid ? ", pid " + std::to_string(w.pid) : "") + ")";
}

// A report's parts: what happened, one optional detail line, and what ferryrun did.
struct Parts {
  std::string headline;
  std::string detail;  // "  reason: ...", without the newline; "" none
  std::string outcome;
};

Parts parts_of(const RankExitFailure& f) {
  Parts p;
  p.headline = rank_where(f.where) + " " +
               (f.signal ? "was killed by " + signal_name(f.signal)
                         : "exited with status " + std::to_string(f.exit_code));
  if (!f.reason.empty()) p.detail = "  reason: " + f.reason;
  if (f.others_aborted) {
    char grace[32];
    std::snprintf(grace, sizeof grace, "%g", f.kill_grace_s);
    p.outcome =
        "The job was aborted: the other ranks get SIGTERM, then "
        "SIGKILL after " +
        std::string(grace) + " s.";
  }
  return p;
}

Parts parts_of(const PmiAbortFailure& f) {
  Parts p;
  p.headline = rank_where(f.where) + " called MPI_Abort (PMI abort) with exit code " +
               std::to_string(f.exit_code);
  if (!f.message.empty()) p.detail = "  message: " + f.message;
  p.outcome = "The job was aborted.";
  return p;
}

Parts parts_of(const HostLostFailure& f) {
  Parts p;
  p.headline = "lost host " + f.host + " (" + f.why + ") with " + std::to_string(f.ranks_running) +
               " rank(s) still running";
  p.outcome =
      "The job was aborted; ferryd on that host kills its ranks when "
      "its connection ends.";
  return p;
}

}  // namespace

std::string format_failure_report(const std::string& program, const JobFailure& failure) {
  const Parts p = std::visit([](const auto& f) { return parts_of(f); }, failure);
  std::string block = kRule + program + ": " + p.headline + ".\n";
  if (!p.detail.empty()) block += p.detail + "\n";
  if (!p.outcome.empty()) block += p.outcome + "\n";
  return block + kRule;
}

std::string signal_name(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  std::string name = abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
  const char* desc = ::strsignal(sig);
  if (desc) name += std::string(" (") + desc + ")";
  return name;
}

}  // namespace ferry
