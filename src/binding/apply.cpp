#include "ferry/binding/apply.hpp"

#include <linux/mempolicy.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>
#include <thread>

namespace ferry {

namespace {

// The kernel reads maxnode - 1 bits of the mask (a historic off-by-one that libnuma also
// works around by passing size + 1).
constexpr unsigned long kMaxNode = kMaxNumaNodes + 1;

long set_mempolicy_bind(const RankBinding& b) noexcept {
  return ::syscall(SYS_set_mempolicy, MPOL_BIND, b.nodemask.data(), kMaxNode);
}

// write(2) of a NUL-terminated string; retries only on EINTR. Async-signal-safe.
void put(int fd, const char* s) noexcept {
  size_t len = 0;
  while (s[len]) ++len;
  while (len > 0) {
    ssize_t n = ::write(fd, s, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    s += n;
    len -= static_cast<size_t>(n);
  }
}

void put_int(int fd, int v) noexcept {
  char buf[16];
  int i = sizeof buf - 1;
  buf[i] = '\0';
  unsigned u = v < 0 ? 0u - static_cast<unsigned>(v) : static_cast<unsigned>(v);
  do {
    buf[--i] = static_cast<char>('0' + u % 10);
    u /= 10;
  } while (u && i > 1);
  if (v < 0) buf[--i] = '-';
  put(fd, buf + i);
}

// strerror is not async-signal-safe; name the errnos these calls document.
const char* errno_name(int e) noexcept {
  switch (e) {
    case EPERM:
      return " EPERM";
    case EINVAL:
      return " EINVAL";
    case ENOSYS:
      return " ENOSYS";
    case EFAULT:
      return " EFAULT";
    case ESRCH:
      return " ESRCH";
    case ENOMEM:
      return " ENOMEM";
    default:
      return "";
  }
}

void warn_line(int fd, const RankBinding& b, const char* what, const char* list, int err,
               const char* consequence) noexcept {
  put(fd, "ferry: warning: local rank ");
  put_int(fd, b.local_rank);
  put(fd, what);
  put(fd, list);
  put(fd, " (errno ");
  put_int(fd, err);
  put(fd, errno_name(err));
  put(fd, consequence);
}

}  // namespace

ChildBindOutcome apply_binding_in_child(const RankBinding& binding) noexcept {
  ChildBindOutcome out;
  if (binding.bound && ::sched_setaffinity(0, sizeof binding.cpu_mask, &binding.cpu_mask) != 0)
    out.cpu_errno = errno;
  if (binding.bind_mem && set_mempolicy_bind(binding) != 0) out.mem_errno = errno;
  return out;
}

void write_binding_warning_in_child(int fd, const RankBinding& b,
                                    ChildBindOutcome outcome) noexcept {
  if (outcome.cpu_errno)
    warn_line(fd, b, ": cannot bind to cpus ", b.cpu_list.c_str(), outcome.cpu_errno,
              "); running unbound\n");
  if (outcome.mem_errno)
    warn_line(fd, b, ": cannot bind memory to NUMA node ", b.numa_list.c_str(), outcome.mem_errno,
              "); running without memory binding\n");
}

Status probe_memory_binding(const RankBinding& binding) {
  int err = 0;
  try {
    std::thread probe([&] {
      if (set_mempolicy_bind(binding) != 0) err = errno;
    });
    probe.join();
  } catch (const std::system_error& e) {
    return make_error(std::string("cannot start the memory binding probe: ") + e.what());
  }
  if (err == 0) return {};
  std::string why =
      "set_mempolicy(MPOL_BIND, NUMA node " + binding.numa_list + "): " + std::strerror(err);
  if (err == EPERM) why += " (a container without CAP_SYS_NICE, or a seccomp filter)";
  if (err == ENOSYS) why += " (kernel without NUMA support)";
  return make_error(why);
}

}  // namespace ferry
