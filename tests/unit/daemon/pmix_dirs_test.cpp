// The PMIx server's directories left by ferryds that died with their guard: removed by the next
// server's start when named for a pid of this namespace that no longer runs, and only those.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "ferry/daemon/pmix_server.hpp"

namespace ferry {
namespace {

namespace fs = std::filesystem;

// A pid that ran and is gone.
pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return pid;
}

TEST(PmixDirs, OnlyDirectoriesOfDeadServersOfThisNamespaceAreRemoved) {
  char root[] = "/tmp/ferry-pmix-dirs-test.XXXXXX";
  ASSERT_NE(::mkdtemp(root), nullptr);
  const std::string mine = PmixServer::directory_prefix();
  ASSERT_EQ(mine.rfind("ferry-pmix-", 0), 0U) << mine;
  ASSERT_EQ(mine.back(), '-');
  // "ferry-pmix-<ns>-<pid>-": the namespace part, to name other pids of it.
  const std::string ns_part = mine.substr(0, mine.rfind('-', mine.size() - 2) + 1);
  const std::string dead = ns_part + std::to_string(dead_pid()) + "-aaaaaa";
  const std::string alive = ns_part + std::to_string(::getppid()) + "-bbbbbb";
  const std::string own = mine + "cccccc";
  const std::string other_ns = "ferry-pmix-1-" + std::to_string(dead_pid()) + "-dddddd";
  const std::string old_style = "ferry-pmix-Ab3dEf";
  for (const auto& d : {dead, alive, own, other_ns, old_style})
    fs::create_directories(fs::path(root) / d / "pmix_dstor_ds21_1");
  std::ofstream(fs::path(root) / (ns_part + std::to_string(dead_pid()) + "-file")) << "x";

  EXPECT_EQ(PmixServer::remove_stale_directories(root), 1);
  EXPECT_FALSE(fs::exists(fs::path(root) / dead));
  for (const auto& d : {alive, own, other_ns, old_style})
    EXPECT_TRUE(fs::exists(fs::path(root) / d)) << d;
  EXPECT_EQ(PmixServer::remove_stale_directories(root), 0);
  fs::remove_all(root);
}

}  // namespace
}  // namespace ferry
