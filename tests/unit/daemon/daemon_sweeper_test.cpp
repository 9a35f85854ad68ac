// The job sweep blocks ferryd's loop, so it is bounded in time: it gives up after its limit
// even while tagged processes keep appearing.
#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "ferry/common/environ.hpp"
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

// A /proc of status files: each pid's state and parent.
class FakeProc {
 public:
  FakeProc() {
    char templ[] = "/tmp/ferry-fake-proc-XXXXXX";
    root_ = ::mkdtemp(templ);
  }
  ~FakeProc() {
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }
  FakeProc(const FakeProc&) = delete;
  FakeProc& operator=(const FakeProc&) = delete;
  void add(pid_t pid, pid_t parent, char state = 'S') {
    const std::string dir = root_ + "/" + std::to_string(pid);
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/status")
        << "Name:\tx\nState:\t" << state << " (x)\nTgid:\t" << pid << "\nPPid:\t" << parent << "\n";
  }
  // The kernel's other view (CONFIG_PROC_CHILDREN): a stat line and, per thread, a children
  // list; no status file, so a scan of the parent links finds nothing here.
  void add_listed(pid_t pid, char state = 'S', const std::map<pid_t, std::string>& tasks = {}) {
    const std::string dir = root_ + "/" + std::to_string(pid);
    std::filesystem::create_directories(dir + "/task/" + std::to_string(pid));
    std::ofstream(dir + "/stat") << pid << " (a (b) c) " << state << " 1 " << pid << "\n";
    std::ofstream none(dir + "/task/" + std::to_string(pid) + "/children");  // no child yet
    for (const auto& [tid, children] : tasks) {
      std::filesystem::create_directories(dir + "/task/" + std::to_string(tid));
      std::ofstream(dir + "/task/" + std::to_string(tid) + "/children") << children;
    }
  }
  const std::string& root() const { return root_; }

 private:
  std::string root_;
};

TEST(Sweeper, FindsEveryDescendantButTheSparedAndTheDead) {
  FakeProc proc;
  proc.add(1, 0);
  proc.add(10, 1);   // ferryd
  proc.add(11, 10);  // a rank
  proc.add(12, 11);  // its child
  proc.add(13, 12);  // and grandchild
  proc.add(14, 10);  // an orphan ferryd adopted (subreaper)
  proc.add(15, 10);  // the guard: spared, and whatever is below it
  proc.add(16, 15);
  proc.add(17, 10, 'Z');  // dead already: not to be killed again in every pass
  proc.add(20, 1);        // not ours
  proc.add(21, 20);
  std::vector<pid_t> found = find_descendants(10, {15}, proc.root());
  std::sort(found.begin(), found.end());
  EXPECT_EQ(found, (std::vector<pid_t>{11, 12, 13, 14}));
  EXPECT_TRUE(find_descendants(21, {}, proc.root()).empty());
}

TEST(Sweeper, WalksTheKernelsChildrenListsWhereItHasThem) {
  FakeProc proc;
  // ferryd (10) with a second thread (19) that adopted an orphan (14); the guard (15) is
  // spared with what is below it; 17 is a zombie. 20 and 21 are not ours and have no files
  // at all: the walk reads only what lies below ferryd.
  proc.add_listed(10, 'S', {{10, "11 15 17 "}, {19, "14 "}});
  proc.add_listed(11, 'S', {{11, "12 "}});
  proc.add_listed(12, 'R', {{12, "13 "}});
  proc.add_listed(13);
  proc.add_listed(14);
  proc.add_listed(15, 'S', {{15, "16 "}});
  proc.add_listed(16);
  proc.add_listed(17, 'Z');
  std::vector<pid_t> found = find_descendants(10, {15}, proc.root());
  std::sort(found.begin(), found.end());
  EXPECT_EQ(found, (std::vector<pid_t>{11, 12, 13, 14}));
  proc.add_listed(30);
  EXPECT_TRUE(find_descendants(30, {}, proc.root()).empty());
}

// The real kernel: a child and the grandchild it started are found below this process, the
// spared one and its own child are not.
TEST(Sweeper, FindsTheDescendantsOfARealProcess) {
  // Orphans come back here, so that the test reaps what it started.
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  auto start = [](int grandchildren) {
    const pid_t pid = ::fork();
    // A group of its own, set on both sides of the fork: the clean-up kills it whole.
    if (pid != 0) {
      ::setpgid(pid, pid);
      return pid;
    }
    ::setpgid(0, 0);
    for (int i = 0; i < grandchildren; ++i)
      if (::fork() == 0) {
        ::pause();
        ::_exit(0);
      }
    ::pause();
    ::_exit(0);
  };
  const pid_t kept = start(1);
  const pid_t spared = start(1);
  ASSERT_GT(kept, 0);
  ASSERT_GT(spared, 0);
  // Counted by process group: other children this test process may have do not matter.
  auto in_group = [](const std::vector<pid_t>& pids, pid_t group) {
    return std::count_if(pids.begin(), pids.end(), [&](pid_t p) { return ::getpgid(p) == group; });
  };
  std::vector<pid_t> found;
  for (int i = 0; i < 400; ++i) {  // until both grandchildren are there
    ::usleep(5000);
    std::vector<pid_t> below_spared;
    list_children(spared, below_spared);
    found = find_descendants(::getpid(), {spared});
    if (in_group(found, kept) == 2 && !below_spared.empty()) break;
  }
  const auto kept_found = in_group(found, kept);
  const auto spared_found = in_group(found, spared);
  for (pid_t group : {kept, spared}) {
    ::kill(-group, SIGKILL);
    while (::waitpid(-group, nullptr, 0) > 0) {
    }
  }
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
  EXPECT_EQ(kept_found, 2) << "the kept child and its grandchild";
  EXPECT_EQ(spared_found, 0) << "the spared child and what is below it";
}

// The guard removes the directories it was given once ferryd is gone (its pipe closes), even
// when ferryd never got to say it cleaned up: a ferryd killed between two attempts leaves
// no temporary directory behind.
TEST(Sweeper, GuardRemovesItsDirectoriesWhenFerrydIsGone) {
  char templ[] = "/tmp/ferry-guard-dir-XXXXXX";
  ASSERT_NE(::mkdtemp(templ), nullptr);
  const std::string dir = templ;
  std::ofstream(dir + "/attempt0-rank0.json") << "{}";
  pid_t guard_pid = -1;
  {
    Guard guard;
    ASSERT_TRUE(guard.start());
    guard_pid = guard.pid();
    EXPECT_GT(guard_pid, 0);
    guard.remove_at_exit(dir);
    ::usleep(100000);
    EXPECT_TRUE(std::filesystem::exists(dir)) << "removed while ferryd lives";
  }  // the pipe closes, as when ferryd dies
  for (int i = 0; i < 100 && std::filesystem::exists(dir); ++i) ::usleep(50000);
  EXPECT_FALSE(std::filesystem::exists(dir));
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  ::waitpid(guard_pid, nullptr, 0);
}

}  // namespace
}  // namespace ferry
