// The job sweep blocks ferryd's loop, so it is bounded in time: it gives up after its limit
// even while tagged processes keep appearing.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "ferry/daemon/sweeper.hpp"

namespace ferry {
namespace {

using Clock = std::chrono::steady_clock;

// Forks an untagged process that starts a tagged `sleep 5` every 2 ms (for 4 s at most).
pid_t start_tagged_spawner(const std::string& tag) {
  std::string env = std::string(kJobTagVar) + "=" + tag;
  char* envp[] = {env.data(), nullptr};
  char arg0[] = "sleep";
  char arg1[] = "5";
  char* argv[] = {arg0, arg1, nullptr};
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  for (int i = 0; i < 2000; ++i) {  // only async-signal-safe calls in here
    if (::fork() == 0) {
      ::execve("/bin/sleep", argv, envp);
      ::_exit(127);
    }
    ::usleep(2000);
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
  }
  ::_exit(0);
}

TEST(Sweeper, GivesUpAfterItsLimitWhileTaggedProcessesKeepComing) {
  const std::string tag = "sweeper-test." + std::to_string(::getpid());
  const pid_t spawner = start_tagged_spawner(tag);
  ASSERT_GT(spawner, 0);
  ::usleep(50000);
  ASSERT_FALSE(find_tagged_processes(tag, ::getpid()).empty());

  const auto start = Clock::now();
  const int killed = sweep_job(tag, {}, std::chrono::milliseconds(30));
  const auto took = Clock::now() - start;
  ::kill(spawner, SIGKILL);
  ::waitpid(spawner, nullptr, 0);
  sweep_job(tag, {}, std::chrono::seconds(1));  // what the spawner left

  EXPECT_GT(killed, 0);
  // The limit plus a scan of /proc or two (a loaded machine scans slowly). Unbounded, the
  // 20 passes alone, 10 ms apart, took 200 ms.
  EXPECT_LT(took, std::chrono::milliseconds(150));
}

}  // namespace
}  // namespace ferry
