#pragma once
/// \file
/// The CPU quota (CFS bandwidth limit) of the calling process's cgroup: what `docker run
/// --cpus=4`, a Kubernetes CPU limit or systemd's CPUQuota= set. A quota is not a cpuset:
/// every host CPU stays in the affinity mask, only the CPU *time* is capped, so the thread
/// count that fits the cores can still oversubscribe the quota. The binding part uses it for
/// thread counts only, never for cpu masks.
///
/// Every path is read below a configurable root ("/" on a real host, FERRY_TEST_DEVICE_ROOT in
/// tests), like accelerator discovery.

#include <optional>
#include <string>

namespace ferry {

/// Which cgroup interface a quota was read from.
enum class CgroupVersion { kV1, kV2 };

/// A CFS bandwidth limit: the cgroup may use `quota_us` of CPU time every `period_us`, i.e.
/// quota_us / period_us CPUs on average (fractional: 250000/100000 is 2.5 CPUs).
struct CpuQuota {
  long long quota_us = 0;   ///< > 0
  long long period_us = 0;  ///< > 0
  CgroupVersion version = CgroupVersion::kV2;
  /// The file that sets the limit, as an absolute path below the root
  /// ("/sys/fs/cgroup/kubepods.slice/cpu.max"): on a nested path the strictest level.
  std::string file;

  /// quota_us / period_us.
  double cpus() const;
  /// cpus() for messages: "8", "2.5", "0.125" (at most three decimals, rounded down).
  std::string cpus_text() const;
  /// cpus_text() with its unit: "1 CPU", "2.5 CPUs".
  std::string cpus_phrase() const;
  /// The threads each of `ranks` ranks may run without the group exceeding its quota:
  /// floor(quota / (period * ranks)), computed in integers, at least 1.
  int threads_per_rank(int ranks) const;
  /// Whether the quota is less than `n` whole CPUs.
  bool less_than(int n) const;
  /// "cgroup v2 /sys/fs/cgroup/cpu.max: 250000/100000" (where it was read, for --verbose).
  std::string source() const;
};

/// Reads the CPU quota of this process's cgroup below `root`:
///  - cgroup v2: the `0::<path>` line of `proc/self/cgroup`, then `cpu.max` ("max 100000"
///    or "QUOTA PERIOD") in `sys/fs/cgroup/<path>` and each parent up to `sys/fs/cgroup`.
///  - cgroup v1: the line whose controllers include `cpu`, then `cpu.cfs_quota_us` (-1: no
///    limit) and `cpu.cfs_period_us` in `sys/fs/cgroup/<controllers>/<path>` (the mount
///    named as in the line, `cpu,cpuacct`, `cpuacct,cpu` or `cpu`) and each parent.
/// A parent's limit also binds its children, so the result is the smallest quota on the
/// path, over both versions. When `<path>` does not exist under the mount (a container
/// whose cgroup is mounted as the mount's root, while proc/self/cgroup shows the host's
/// path), its trailing parts are tried, down to the mount root itself. A path with "..",
/// missing files, "max", -1 and unparsable or non-positive values all mean "no limit at that
/// level"; nullopt when no level has one. Never throws.
std::optional<CpuQuota> read_cpu_quota(const std::string& root);

}  // namespace ferry
