// The process-tree reader against real processes (busy, idle, stopped, a tree), and against
// made-up /proc and sysfs trees for what cannot be made here on demand (disk sleep, NUMA).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include "ferry/monitor/proc_tree.hpp"

namespace ferry {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// A child that spins (busy), sleeps (idle), or forks a spinning grandchild and sleeps (tree).
pid_t start(const char* what) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);  // its own group: end() kills the whole tree
    if (std::string(what) == "tree") {
      if (::fork() == 0)
        for (;;) {
        }
      ::pause();
    }
    if (std::string(what) == "busy")
      for (;;) {
      }
    ::pause();
    ::_exit(0);
  }
  return pid;
}

void end(pid_t pid) {
  ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

// Lets `pid`'s tree run for a while and samples it twice.
RankUse use_of(pid_t pid) {
  TreeSampler sampler;
  RankUse use;
  const auto began = TreeSampler::Clock::now();
  EXPECT_TRUE(sampler.sample(pid, began, use));
  std::this_thread::sleep_for(600ms);
  EXPECT_TRUE(sampler.sample(pid, began, use));
  return use;
}

TEST(MonitorProcTree, BusyIdleAndStoppedProcessesAreToldApart) {
  const pid_t busy = start("busy");
  const pid_t idle = start("idle");
  const pid_t stopped = start("busy");
  ::kill(stopped, SIGSTOP);
  std::this_thread::sleep_for(100ms);
  const RankUse b = use_of(busy);
  const RankUse i = use_of(idle);
  const RankUse s = use_of(stopped);
  // A spinning process gets a share of a core however loaded the machine: more than a tenth
  // unless some 20 other threads want the 2 CPUs of the CI machine at once (with 30%, the test
  // failed now and then beside a build). An idle or stopped one gets none.
  EXPECT_GT(b.cpu_permille, 100u);
  EXPECT_EQ(b.state, 'R');
  EXPECT_LT(i.cpu_permille, 50u);
  EXPECT_EQ(i.state, 'S');
  EXPECT_LT(s.cpu_permille, 50u);
  EXPECT_EQ(s.state, 'T');
  EXPECT_EQ(b.processes, 1u);
  EXPECT_GE(b.threads, 1u);
  EXPECT_GT(b.rss_kb, 0u);
  for (pid_t p : {busy, idle, stopped}) end(p);
}

TEST(MonitorProcTree, AGrandchildsWorkCountsForTheRank) {
  const pid_t root = start("tree");
  std::this_thread::sleep_for(100ms);
  const RankUse u = use_of(root);
  EXPECT_EQ(u.processes, 2u);
  EXPECT_EQ(u.state, 'S');          // the rank itself waits; its child spins
  EXPECT_GT(u.cpu_permille, 100u);  // see BusyIdleAndStoppedProcessesAreToldApart
  const TreeReading r = read_tree(root);
  EXPECT_TRUE(r.ok);
  end(root);
  EXPECT_FALSE(read_tree(root).ok);
  RankUse gone;
  TreeSampler sampler;
  EXPECT_FALSE(sampler.sample(root, TreeSampler::Clock::now(), gone));
}

TEST(MonitorProcTree, ADescendantInDiskSleepMarksTheTree) {
  // A /proc of two processes: 100 (sleeping, the rank) and its child 101 in D.
  const fs::path proc = fs::path(::testing::TempDir()) / "monitor_proc";
  fs::remove_all(proc);
  fs::create_directories(proc / "100/task/100");
  fs::create_directories(proc / "101/task/101");
  std::ofstream(proc / "100/stat")
      << "100 (rank (a)) S 1 100 100 0 -1 0 0 0 0 0 100 50 7 3 20 0 2 0 5 1000 25 0\n";
  std::ofstream(proc / "101/stat")
      << "101 (io) D 100 100 100 0 -1 0 0 0 0 0 10 10 0 0 20 0 1 0 6 1000 5 0\n";
  std::ofstream(proc / "100/task/100/children") << "101 ";
  std::ofstream(proc / "101/task/101/children") << "";
  const TreeReading r = read_tree(100, proc.string());
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.state, 'D');
  EXPECT_EQ(r.processes, 2u);
  EXPECT_EQ(r.threads, 3u);
  EXPECT_EQ(r.cpu_ticks, 100u + 50 + 7 + 3 + 10 + 10);  // reaped children's time counts
  EXPECT_EQ(r.rss_kb, 30u * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)) / 1024);
  // A traced rank reads as stopped.
  std::ofstream(proc / "101/stat")
      << "101 (io) S 100 100 100 0 -1 0 0 0 0 0 10 10 0 0 20 0 1 0 6 1000 5 0\n";
  std::ofstream(proc / "100/stat")
      << "100 (rank) t 1 100 100 0 -1 0 0 0 0 0 100 50 7 3 20 0 2 0 5 1000 25 0\n";
  EXPECT_EQ(read_tree(100, proc.string()).state, 'T');
  EXPECT_FALSE(read_tree(102, proc.string()).ok);
}

TEST(MonitorProcTree, CpusAndDevicesOfARealProcess) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    char var[] = "HIP_VISIBLE_DEVICES=0";
    char cuda[] = "CUDA_VISIBLE_DEVICES=2,3";
    char* env[] = {var, cuda, nullptr};
    char sleep_path[] = "/bin/sleep";
    char seconds[] = "30";
    char* argv[] = {sleep_path, seconds, nullptr};
    ::execve(sleep_path, argv, env);
    ::_exit(127);
  }
  std::this_thread::sleep_for(200ms);
  // CUDA's variable is looked for first, whatever the order in the environment.
  EXPECT_EQ(visible_devices(pid), "CUDA_VISIBLE_DEVICES=2,3");
  EXPECT_FALSE(allowed_cpus(pid).empty());
  EXPECT_EQ(visible_devices(::getpid()).find("ROCR"), std::string::npos);
  end(pid);
}

TEST(MonitorProcTree, NumaNodesFromSysfsInNodeOrder) {
  const fs::path root = fs::path(::testing::TempDir()) / "monitor_sys";
  fs::remove_all(root);
  const fs::path nodes = root / "sys/devices/system/node";
  for (const char* n : {"node0", "node1", "node10", "node2"}) fs::create_directories(nodes / n);
  fs::create_directories(nodes / "possible_dir_not_a_node");
  std::ofstream(nodes / "node0/cpulist") << "0-7\n";
  std::ofstream(nodes / "node1/cpulist") << "8-15\n";
  std::ofstream(nodes / "node2/cpulist") << "16-23\n";
  std::ofstream(nodes / "node10/cpulist") << "80-87\n";
  EXPECT_EQ(numa_cpu_lists(root.string()),
            (std::vector<std::string>{"0-7", "8-15", "16-23", "80-87"}));
  // No nodes in sysfs: every online CPU as one node.
  fs::remove_all(nodes);
  fs::create_directories(root / "sys/devices/system/cpu");
  std::ofstream(root / "sys/devices/system/cpu/online") << "0-3\n";
  EXPECT_EQ(numa_cpu_lists(root.string()), (std::vector<std::string>{"0-3"}));
  EXPECT_FALSE(numa_cpu_lists("/").empty());  // this machine
}

}  // namespace
}  // namespace ferry
