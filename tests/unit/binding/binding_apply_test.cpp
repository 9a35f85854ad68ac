#include <gtest/gtest.h>
#include <linux/mempolicy.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "ferry/binding/apply.hpp"
#include "ferry/binding/id_list.hpp"
#include "ferry/binding/plan.hpp"
#include "ferry/binding/report.hpp"

namespace ferry {
namespace {

// The last local rank of a one-rank-per-core plan of this machine: bound to one core.
RankBinding one_core_binding(bool bind_mem = false) {
  auto t = Topology::load_system();
  EXPECT_TRUE(t.ok());
  BindingOptions o;
  o.bind_mem = bind_mem;
  const int cores = static_cast<int>(t->cores().size());
  auto p = plan_bindings(*t, {}, o, cores, env_lookup_from({}));
  EXPECT_TRUE(p.ok());
  return p->ranks.back();
}

int mempolicy_mode() {
  int mode = -1;
  if (::syscall(SYS_get_mempolicy, &mode, nullptr, 0, nullptr, 0) != 0) return -1;
  return mode;
}

// Runs `child` in a forked process; returns its exit status (or -1 if it did not exit).
template <typename F>
int in_child(F child) {
  pid_t pid = ::fork();
  if (pid == 0) _exit(child());
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(BindingApply, ChildRunsOnExactlyItsCpusAcrossExec) {
  RankBinding b = one_core_binding();
  ASSERT_TRUE(b.bound);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], 1);
    if (apply_binding_in_child(b).cpu_errno != 0) _exit(3);
    ::execl("/bin/sh", "sh", "-c", "grep Cpus_allowed_list /proc/self/status", nullptr);
    _exit(4);
  }
  ::close(fds[1]);
  std::string out;
  char buf[256];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, n);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(out, "Cpus_allowed_list:\t" + b.cpu_list + "\n");
}

TEST(BindingApply, UnboundRankKeepsTheInheritedMask) {
  RankBinding b = one_core_binding();
  b.bound = false;
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof before, &before), 0);
  int rc = in_child([&] {
    auto o = apply_binding_in_child(b);
    cpu_set_t now;
    sched_getaffinity(0, sizeof now, &now);
    return o.cpu_errno == 0 && CPU_EQUAL(&now, &before) ? 0 : 1;
  });
  EXPECT_EQ(rc, 0);
}

TEST(BindingApply, RefusedMaskReportsErrnoWithoutAborting) {
  RankBinding b = one_core_binding();
  CPU_ZERO(&b.cpu_mask);
  CPU_SET(CPU_SETSIZE - 1, &b.cpu_mask);  // no such cpu: EINVAL
  int rc = in_child([&] { return apply_binding_in_child(b).cpu_errno == EINVAL ? 0 : 1; });
  EXPECT_EQ(rc, 0);
}

TEST(BindingApply, ChildWarningIsOneLinePerFailure) {
  RankBinding b;
  b.local_rank = 2;
  b.cpu_list = "0-3";
  b.numa_list = "1";
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  write_binding_warning_in_child(fds[1], b, ChildBindOutcome{EINVAL, EPERM});
  write_binding_warning_in_child(fds[1], b, ChildBindOutcome{});
  ::close(fds[1]);
  std::string out;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, n);
  ::close(fds[0]);
  EXPECT_EQ(out,
            "ferry: warning: local rank 2: cannot bind to cpus 0-3 (errno 22 EINVAL); running "
            "unbound\n"
            "ferry: warning: local rank 2: cannot bind memory to NUMA node 1 (errno 1 EPERM); "
            "running without memory binding\n");
}

TEST(BindingApply, MemoryProbeAgreesWithTheChildAndLeavesUsAlone) {
  RankBinding b = one_core_binding(/*bind_mem=*/true);
  ASSERT_TRUE(b.bind_mem);
  const int before = mempolicy_mode();
  Status probe = probe_memory_binding(b);
  EXPECT_EQ(mempolicy_mode(), before);  // the probe ran in its own thread
  int rc = in_child([&] {
    auto o = apply_binding_in_child(b);
    if (o.mem_errno != 0) return 2;
    return mempolicy_mode() == MPOL_BIND ? 0 : 1;
  });
  if (probe.ok()) {
    EXPECT_EQ(rc, 0);
  } else {
    // A container without CAP_SYS_NICE: the child is refused the same way.
    EXPECT_EQ(rc, 2);
    EXPECT_NE(probe.error().message.find("set_mempolicy(MPOL_BIND, NUMA node"), std::string::npos);
  }
}

TEST(BindingApply, MemoryProbeExplainsARefusal) {
  RankBinding b = one_core_binding(/*bind_mem=*/true);
  b.nodemask = {};
  b.nodemask[kNodemaskWords - 1] = 1UL << 63;  // node 1023: not online anywhere
  b.numa_list = "1023";
  Status probe = probe_memory_binding(b);
  ASSERT_FALSE(probe.ok());
  EXPECT_EQ(probe.error().message, "set_mempolicy(MPOL_BIND, NUMA node 1023): Invalid argument");
  int rc = in_child([&] { return apply_binding_in_child(b).mem_errno == EINVAL ? 0 : 1; });
  EXPECT_EQ(rc, 0);
}

TEST(BindingReport, UnboundAndMemoryBoundLines) {
  HostBindingPlan plan;
  RankBinding b;
  b.local_rank = 1;
  b.cpu_list = "20-25,68-73";
  b.cores = 6;
  b.numa_list = "0-1";
  EXPECT_EQ(format_binding_report("box", 9, b, plan),
            "box rank 9 local_rank 1: not bound (cpus 20-25,68-73, 6 cores) NUMA 0-1, no device");
  b.bound = true;
  b.bind_mem = true;
  b.cpu_list = "4";
  b.cores = 1;
  b.numa_list = "0";
  EXPECT_EQ(format_binding_report("box", 9, b, plan),
            "box rank 9 local_rank 1: cpus 4 (1 core) NUMA 0 mem bound, no device");
}

}  // namespace
}  // namespace ferry
