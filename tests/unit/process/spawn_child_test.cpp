// What a spawned child starts with, and what its start leaves of the parent. The child is
// started sharing the parent's memory until its exec (CLONE_VM | CLONE_VFORK): its resets
// (signal dispositions, mask, process group, descriptors) must be its own, and the parent's
// signal mask, handlers and descriptors as they were.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "ferry/process/spawn.hpp"

namespace ferry {
namespace {

// Runs `argv` with its stdout on a pipe: what it wrote, and its exit status.
struct Ran {
  std::string out;
  int status = -1;
  pid_t pid = -1;
};

Ran run(std::vector<std::string> argv, std::vector<int> keep_fds = {}, std::string wdir = "") {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return {};
  SpawnRequest req;
  req.path = argv[0];
  req.argv = std::move(argv);
  req.stdout_fd = p[1];
  req.keep_fds = std::move(keep_fds);
  req.wdir = std::move(wdir);
  auto pid = spawn_process(req);
  ::close(p[1]);
  Ran r;
  char buf[4096];
  for (ssize_t n; (n = ::read(p[0], buf, sizeof buf)) > 0;)
    r.out.append(buf, static_cast<size_t>(n));
  ::close(p[0]);
  if (!pid) return r;
  r.pid = *pid;
  ::waitpid(*pid, &r.status, 0);
  return r;
}

// The hex value of a /proc/PID/status field ("SigBlk:\t0000000000000000").
uint64_t status_mask(const std::string& status, const std::string& field) {
  const size_t at = status.find(field + ":\t");
  if (at == std::string::npos) return ~uint64_t{0};
  return std::stoull(status.substr(at + field.size() + 2, 16), nullptr, 16);
}

std::string status_field(const std::string& status, const std::string& field) {
  const size_t at = status.find(field + ":\t");
  if (at == std::string::npos) return "";
  const size_t from = at + field.size() + 2;
  return status.substr(from, status.find('\n', from) - from);
}

void on_usr2(int) {}

TEST(SpawnChild, TheChildHasDefaultSignalsAndItsOwnGroupAndTheParentKeepsItsOwn) {
  struct sigaction ignore {
  }, handle{}, old_usr1{}, old_usr2{};
  ignore.sa_handler = SIG_IGN;
  handle.sa_handler = on_usr2;
  ASSERT_EQ(::sigaction(SIGUSR1, &ignore, &old_usr1), 0);
  ASSERT_EQ(::sigaction(SIGUSR2, &handle, &old_usr2), 0);
  sigset_t block, old_mask;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, &block, &old_mask), 0);

  const Ran r = run({"/bin/cat", "/proc/self/status"});
  ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << r.out;
  // An ignored signal would stay ignored across exec, a blocked one blocked: both reset.
  EXPECT_EQ(status_mask(r.out, "SigIgn"), 0u) << r.out;
  EXPECT_EQ(status_mask(r.out, "SigBlk"), 0u) << r.out;
  EXPECT_EQ(status_field(r.out, "NSpgid"), std::to_string(r.pid));

  // The parent: its mask, its handlers, as they were.
  sigset_t now;
  ASSERT_EQ(::pthread_sigmask(SIG_SETMASK, nullptr, &now), 0);
  EXPECT_EQ(sigismember(&now, SIGTERM), 1);
  struct sigaction usr1 {
  }, usr2{};
  ::sigaction(SIGUSR1, nullptr, &usr1);
  ::sigaction(SIGUSR2, nullptr, &usr2);
  EXPECT_EQ(usr1.sa_handler, SIG_IGN);
  EXPECT_EQ(usr2.sa_handler, &on_usr2);

  ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  ::sigaction(SIGUSR1, &old_usr1, nullptr);
  ::sigaction(SIGUSR2, &old_usr2, nullptr);
}

TEST(SpawnChild, KeptDescriptorsReachTheChildAndTheParentsStayOpen) {
  int kept[2];
  ASSERT_EQ(::pipe2(kept, O_CLOEXEC), 0);
  const std::string fd = std::to_string(kept[1]);
  // The kept one is open in the child (fstat-able there); the parent's stays close-on-exec.
  const Ran r = run({"/bin/sh", "-c", "test -e /proc/self/fd/" + fd + " && echo open"}, {kept[1]});
  EXPECT_EQ(r.out, "open\n");
  const Ran other =
      run({"/bin/sh", "-c",
           "test -e /proc/self/fd/" + std::to_string(kept[0]) + " && echo open || echo closed"});
  EXPECT_EQ(other.out, "closed\n");
  EXPECT_NE(::fcntl(kept[0], F_GETFD), -1);
  EXPECT_NE(::fcntl(kept[1], F_GETFD), -1);
  ::close(kept[0]);
  ::close(kept[1]);
}

TEST(SpawnChild, ThreadsSpawnAtOnce) {
  // Each spawn waits only in its own thread, on a stack of its own for its child.
  std::vector<std::thread> threads;
  std::vector<int> started(4, 0);
  for (size_t t = 0; t < started.size(); ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        const Ran r = run({"/bin/sh", "-c", "echo " + std::to_string(t)}, {}, "/");
        if (r.out == std::to_string(t) + "\n" && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0)
          ++started[t];
      }
    });
  for (auto& th : threads) th.join();
  for (int n : started) EXPECT_EQ(n, 25);
}

}  // namespace
}  // namespace ferry
