#pragma once
/// \file
/// Applying a RankBinding to a process: in the child between fork and exec (async-signal-safe
/// system calls only, on masks computed before fork), plus a probe ferryd runs once before
/// forking to learn whether this kernel/container lets it bind memory at all.

#include "ferry/binding/plan.hpp"
#include "ferry/common/result.hpp"

namespace ferry {

/// What the child's binding calls returned: 0, or the errno of the refused call.
struct ChildBindOutcome {
  int cpu_errno = 0;  ///< sched_setaffinity
  int mem_errno = 0;  ///< set_mempolicy(MPOL_BIND)
};

/// Binds the calling process (call it in the forked child, before execve; the binding
/// survives exec and is inherited by the rank's threads and children). Makes only the raw
/// sched_setaffinity and set_mempolicy system calls: no allocation, no locks, no errno
/// translation, so it is safe between fork and exec. An unbound rank is left alone. CPU
/// binding is attempted first; memory binding is attempted even if it failed.
ChildBindOutcome apply_binding_in_child(const RankBinding& binding) noexcept;

/// Writes one line such as "ferry: warning: local rank 2: cannot bind memory to NUMA node 1
/// (errno 1 EPERM); running without memory binding\n" to `fd` (the rank's stderr, say) for
/// each failure in `outcome`. Async-signal-safe (write(2) of precomputed text). Nothing is
/// written for a zero outcome.
void write_binding_warning_in_child(int fd, const RankBinding& binding,
                                    ChildBindOutcome outcome) noexcept;

/// Tries set_mempolicy(MPOL_BIND) to `binding`'s nodes in a short-lived thread (memory
/// policy is per thread, so ferryd's own is untouched). Error: one line with the reason
/// (EPERM: container without CAP_SYS_NICE or a seccomp filter; ENOSYS: kernel without
/// NUMA). Call once before forking when any rank has bind_mem; on Error, call
/// disable_memory_binding(plan, error.message).
Status probe_memory_binding(const RankBinding& binding);

}  // namespace ferry
