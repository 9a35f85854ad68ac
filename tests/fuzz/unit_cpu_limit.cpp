// Every fuzzer's time limit per input, counted in CPU time. libFuzzer's own (-timeout) is
// wall-clock time: a fuzzer run at idle priority beside a busy test suite may wait minutes
// for a CPU in one input and be reported as hung. Each fuzzer is linked with
// --wrap=LLVMFuzzerTestOneInput (tests/fuzz/CMakeLists.txt), so libFuzzer calls the wrapper
// below, which gives the target's input FERRY_FUZZ_UNIT_CPU seconds (default 10) of CPU
// time, user and system, by ITIMER_PROF; past them, one line to stderr and abort(), which
// libFuzzer reports as a crash and keeps the input of.
#include <sys/time.h>
#include <unistd.h>

#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

extern "C" int __real_LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

void on_cpu_limit(int) {
  static const char kLine[] =
      "==ferry-fuzz== one input ran past FERRY_FUZZ_UNIT_CPU seconds of CPU time\n";
  (void)!write(STDERR_FILENO, kLine, sizeof kLine - 1);
  std::abort();
}

itimerval limit_from_environment() {
  double secs = 10;
  if (const char* v = std::getenv("FERRY_FUZZ_UNIT_CPU"); v && *v) secs = std::strtod(v, nullptr);
  if (!(secs > 0)) secs = 10;
  itimerval t{};
  t.it_value.tv_sec = static_cast<time_t>(secs);
  t.it_value.tv_usec =
      static_cast<suseconds_t>((secs - static_cast<double>(t.it_value.tv_sec)) * 1e6);
  if (t.it_value.tv_sec == 0 && t.it_value.tv_usec == 0) t.it_value.tv_usec = 1;
  struct sigaction sa {};
  sa.sa_handler = on_cpu_limit;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGPROF, &sa, nullptr);
  return t;
}

}  // namespace

extern "C" int __wrap_LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const itimerval limit = limit_from_environment();
  static const itimerval off{};
  setitimer(ITIMER_PROF, &limit, nullptr);
  int rc = __real_LLVMFuzzerTestOneInput(data, size);
  setitimer(ITIMER_PROF, &off, nullptr);
  return rc;
}
