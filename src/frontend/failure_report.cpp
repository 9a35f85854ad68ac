#include "ferry/frontend/failure_report.hpp"

#include <cstdio>
#include <cstring>
#include <string_view>
#include <vector>

#include "ferry/common/signal_names.hpp"
#include "ferry/frontend/torch_error.hpp"

namespace ferry {
namespace {

// The most lines of a rank's Python traceback a report shows (its last ones).
constexpr size_t kTracebackLines = 30;

constexpr const char* kRule =
    "------------------------------------------------"
    "--------------------------\n";

// "rank 1 on host node2 (local rank 0, pid 1001)"; "spawned process 1:0 on host node2 (pid
// 1002)" for a process MPI_Comm_spawn started.
std::string rank_where(const RankWhere& w) {
  if (!w.label.empty())
    return w.label + " on host " + w.host + (w.pid ? " (pid " + std::to_string(w.pid) + ")" : "");
  return "rank " + std::to_string(w.rank) + " on host " + w.host + " (local rank " +
         std::to_string(w.local_rank) + (w.pid ? ", pid " + std::to_string(w.pid) : "") + ")";
}

// A report's parts: what happened, optional detail lines, and what ferryrun did.
struct Parts {
  std::string headline;
  std::string detail;  // "  reason: ...", each line ending in a newline; "" none
  std::string outcome;
};

// "  error: RuntimeError: boom" and the traceback's last lines, indented.
std::string error_file_lines(const std::string& text) {
  const TorchError e = parse_torch_error(text);
  std::string out;
  if (!e.message.empty()) out += "  error: " + e.message + "\n";
  if (e.traceback.empty()) return out;
  std::vector<std::string_view> lines;
  std::string_view rest = e.traceback;
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    lines.push_back(rest.substr(0, nl));
    rest = nl == std::string_view::npos ? "" : rest.substr(nl + 1);
  }
  out += "  traceback:\n";
  const size_t first = lines.size() > kTracebackLines ? lines.size() - kTracebackLines : 0;
  if (first > 0) out += "    ... (" + std::to_string(first) + " lines)\n";
  for (size_t i = first; i < lines.size(); ++i) out += "    " + std::string(lines[i]) + "\n";
  return out;
}

Parts parts_of(const RankExitFailure& f) {
  Parts p;
  p.headline = rank_where(f.where) + " " +
               (f.signal ? "was killed by " + signal_name(f.signal)
                         : "exited with status " + std::to_string(f.exit_code));
  if (!f.reason.empty()) p.detail = "  reason: " + f.reason + "\n";
  if (!f.error_file.empty()) p.detail += error_file_lines(f.error_file);
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
  // Open MPI's ranks always send "N/A" (its MPI_Abort takes no message): no message.
  if (!f.message.empty() && f.message != "N/A") p.detail = "  message: " + f.message + "\n";
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

std::string format_failure_report(const std::string& program, const JobFailure& failure,
                                  int attempt) {
  Parts p = std::visit([](const auto& f) { return parts_of(f); }, failure);
  std::string block = kRule + program + ": ";
  if (attempt >= 0) {
    block += "attempt " + std::to_string(attempt) + ": ";
    // "The job was aborted" is not known yet: another attempt may follow.
    if (p.outcome.starts_with("The job was aborted"))
      p.outcome =
          "This attempt is over" + p.outcome.substr(std::string("The job was aborted").size());
  }
  block += p.headline + ".\n" + p.detail;
  if (!p.outcome.empty()) block += p.outcome + "\n";
  return block + kRule;
}

std::string signal_name(int sig) {
  const char* abbrev = signal_abbrev(sig);
  std::string name = abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
  const char* desc = ::strsignal(sig);
  if (desc) name += std::string(" (") + desc + ")";
  return name;
}

}  // namespace ferry
