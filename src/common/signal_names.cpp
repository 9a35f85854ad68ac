#include "ferry/common/signal_names.hpp"

#include <array>
#include <csignal>

namespace ferry {

const char* signal_abbrev(int sig) {
  // Linux's numbers on every architecture ferry builds for (x86-64, arm64).
  static constexpr std::array<const char*, 32> kNames = {
      nullptr, "HUP",  "INT",  "QUIT", "ILL",    "TRAP",   "ABRT",  "BUS",  "FPE",  "KILL", "USR1",
      "SEGV",  "USR2", "PIPE", "ALRM", "TERM",   "STKFLT", "CHLD",  "CONT", "STOP", "TSTP", "TTIN",
      "TTOU",  "URG",  "XCPU", "XFSZ", "VTALRM", "PROF",   "WINCH", "POLL", "PWR",  "SYS"};
  static_assert(SIGTERM == 15 && SIGSYS == 31 && SIGSTKFLT == 16);
  if (sig > 0 && sig < static_cast<int>(kNames.size())) return kNames[sig];
  // The real-time signals (SIGRTMIN..SIGRTMAX) have no fixed name: glibc gives none either.
  return nullptr;
}

}  // namespace ferry
