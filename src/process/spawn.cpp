#include "ferry/process/spawn.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <map>
#include <memory>
#include <string_view>

#include "ferry/binding/apply.hpp"
#include "ferry/common/printable.hpp"
#include "ferry/process/unique_fd.hpp"

namespace ferry {

std::vector<std::string> merge_environment(const std::vector<std::vector<std::string>>& layers) {
  std::vector<std::string> out;
  std::map<std::string, size_t, std::less<>> index;
  for (const auto& layer : layers) {
    for (const auto& kv : layer) {
      auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) continue;
      std::string name = kv.substr(0, eq);
      auto it = index.find(name);
      if (it != index.end()) {
        out[it->second] = kv;
      } else {
        index.emplace(std::move(name), out.size());
        out.push_back(kv);
      }
    }
  }
  return out;
}

std::vector<std::string> prepend_paths(std::vector<std::string> env,
                                       const std::vector<std::string>& prepends) {
  for (const auto& p : prepends) {
    const auto eq = p.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == p.size()) continue;
    const std::string_view name = std::string_view(p).substr(0, eq);
    const std::string_view dir = std::string_view(p).substr(eq + 1);
    std::string entry = std::string(name) + "=" + std::string(dir);
    auto it = std::find_if(env.rbegin(), env.rend(), [&](const std::string& kv) {
      return kv.size() > name.size() && kv.compare(0, name.size(), name) == 0 &&
             kv[name.size()] == '=';
    });
    if (it == env.rend()) {
      env.push_back(std::move(entry));
      continue;
    }
    const std::string_view old = std::string_view(*it).substr(name.size() + 1);
    if (!old.empty()) entry += ":" + std::string(old);
    *it = std::move(entry);
  }
  return env;
}

Result<std::string> resolve_command(const std::string& command, const std::vector<std::string>& env,
                                    const std::string& wdir) {
  if (command.empty()) return make_error("empty command");
  if (command.find('/') != std::string::npos) return command;
  std::string path = "/usr/local/bin:/usr/bin:/bin";
  for (const auto& kv : env)
    if (kv.starts_with("PATH=")) path = kv.substr(5);
  int last_errno = ENOENT;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    // Built by appending: GCC 12 warns falsely on `dir = "."` and `dir + "/" + command`
    // here (-Wrestrict, PR 105329).
    std::string cand = end > start ? path.substr(start, end - start) : std::string(1, '.');
    cand += '/';
    cand += command;
    std::string probe = (cand[0] == '/' || wdir.empty()) ? cand : wdir + "/" + cand;
    struct stat st {};
    if (::stat(probe.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      if (::access(probe.c_str(), X_OK) == 0) return cand;
      last_errno = EACCES;
    }
    start = end + 1;
  }
  if (last_errno == EACCES) return make_error("'" + command + "': permission denied");
  return make_error("'" + command + "': command not found in PATH " + path);
}

namespace {

// Added to errno in the child's report when binding, not exec, failed.
constexpr int kBindFailure = 1 << 16;

[[noreturn]] void child_fail(int fd, int err) {
  // write(2) and _exit(2) are async-signal-safe.
  ssize_t ignored = ::write(fd, &err, sizeof err);
  (void)ignored;
  _exit(127);
}

// Why execve(path) failed with `err`, as the user would put it: the kernel's ENOENT for a
// script whose #! interpreter is missing reads as if the script were missing, and EACCES
// for a directory as a permission problem. `path` is relative to `wdir` unless absolute.
std::string exec_failure(const std::string& path, const std::string& wdir, int err) {
  const std::string at = path.starts_with('/') || wdir.empty() ? path : wdir + "/" + path;
  const std::string what = "cannot execute '" + printable(path) + "': ";
  struct stat st {};
  if (err == EACCES && ::stat(at.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return what + "is a directory";
  if (err == ENOENT && ::stat(at.c_str(), &st) == 0) {
    char head[256] = {};
    UniqueFd fd(::open(at.c_str(), O_RDONLY | O_CLOEXEC));
    const ssize_t n = fd.get() >= 0 ? ::read(fd.get(), head, sizeof head - 1) : -1;
    std::string_view line(head, n > 0 ? static_cast<size_t>(n) : 0);
    if (line.starts_with("#!")) {
      line = line.substr(
          2, line.find('\n') == std::string_view::npos ? line.size() - 2 : line.find('\n') - 2);
      const size_t from = line.find_first_not_of(" \t");
      line = from == std::string_view::npos ? std::string_view() : line.substr(from);
      const std::string interpreter(line.substr(0, line.find_first_of(" \t\r")));
      return "interpreter " + printable(interpreter) + " of script " + printable(path) +
             " not found";
    }
    return what + "its ELF interpreter (the program loader it names) is missing";
  }
  return what + std::strerror(err);
}

// What the child needs, made before it exists: it shares the parent's memory until its exec
// (CLONE_VM | CLONE_VFORK), so it may write nothing of the parent's and allocate nothing.
struct ChildStart {
  const SpawnRequest* req = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  int report_fd = -1;  // the error pipe's write end (close-on-exec)
  int read_fd = -1;    // its read end, the parent's: closed in the child
  pid_t parent = 0;
};

// The child, on a stack of its own, with every signal blocked; only system calls from here
// to exec (or _exit). Its file descriptors and signal dispositions are its own (no
// CLONE_FILES, no CLONE_SIGHAND): closing, duplicating and resetting them leaves the
// parent's as they were. errno is the parent thread's (the same TLS): the parent reads it
// only when the clone itself failed, before any child ran.
int child_main(void* arg) noexcept {
  const ChildStart& c = *static_cast<const ChildStart*>(arg);
  const SpawnRequest& req = *c.req;
  ::close(c.read_fd);
  ::setpgid(0, 0);
  // Under Yama's ptrace_scope 1 only an ancestor may attach: this lets the parent's
  // children (ferryd's stack dumper, the rank's sibling) read the stack of a hung rank.
  // Without Yama it fails, harmlessly.
  ::prctl(PR_SET_PTRACER, c.parent);
  if (req.parent_death_signal != 0) {
    ::prctl(PR_SET_PDEATHSIG, req.parent_death_signal);
    if (::getppid() != c.parent) _exit(127);  // the parent died between clone and prctl
  }
  for (int s = 1; s < NSIG; ++s) ::signal(s, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (req.stdin_fd >= 0 && ::dup2(req.stdin_fd, 0) < 0) child_fail(c.report_fd, errno);
  if (req.stdout_fd >= 0 && ::dup2(req.stdout_fd, 1) < 0) child_fail(c.report_fd, errno);
  if (req.stderr_fd >= 0 && ::dup2(req.stderr_fd, 2) < 0) child_fail(c.report_fd, errno);
  for (int fd : req.keep_fds) {
    int flags = ::fcntl(fd, F_GETFD);
    if (flags >= 0) ::fcntl(fd, F_SETFD, flags & ~FD_CLOEXEC);
  }
  if (req.binding) {
    // Masks were computed before the clone; only raw system calls here.
    ChildBindOutcome o = apply_binding_in_child(*req.binding);
    if (o.cpu_errno && req.binding->strict) child_fail(c.report_fd, kBindFailure + o.cpu_errno);
    if (o.cpu_errno || o.mem_errno) write_binding_warning_in_child(2, *req.binding, o);
  }
  if (!req.wdir.empty() && ::chdir(req.wdir.c_str()) != 0) child_fail(c.report_fd, -errno);
  ::execve(req.path.c_str(), c.argv, c.envp);
  child_fail(c.report_fd, errno);
}

// The child's stack: what child_main and the system call wrappers it calls use, with room.
constexpr std::size_t kChildStack = std::size_t{64} * 1024;

}  // namespace

// The child is started as posix_spawn starts one (CLONE_VM | CLONE_VFORK), not by fork(): a
// fork copies the parent's page tables and leaves its pages copy-on-write, which the parent
// then faults on; the exec throws that copy away. On a paravirtualised VM that was 2.5 ms
// of CPU per rank (fork + exec + exit of `true` from a 4 MB process: 6.4 ms against 3.9).
// This thread waits until the child has exec'd or exited; the process's other threads run on.
Result<pid_t> spawn_process(const SpawnRequest& req) {
  std::vector<char*> argv, envp;
  for (const auto& a : req.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : req.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  // The child reports a failed exec (or chdir, or strict binding) on this pipe; a
  // successful exec closes it (close-on-exec), so EOF means the program runs.
  auto errpipe = make_pipe();
  if (!errpipe) return errpipe.error();
  const ChildStart start{
      &req, argv.data(), envp.data(), errpipe->write.get(), errpipe->read.get(), ::getpid()};
  const auto stack = std::make_unique_for_overwrite<char[]>(kChildStack);
  sigset_t all;
  sigfillset(&all);
  sigset_t old;
  // Block signals across the clone so the child cannot run a parent handler before reset.
  pthread_sigmask(SIG_SETMASK, &all, &old);
  // The stack grows down from its 16-byte aligned top.
  void* top = stack.get() + (kChildStack & ~std::size_t{15});
  const pid_t pid =
      ::clone(child_main, top, CLONE_VM | CLONE_VFORK | SIGCHLD, const_cast<ChildStart*>(&start));
  int fork_errno = errno;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errpipe->write.reset();
  if (pid < 0) return make_error(std::string("clone: ") + std::strerror(fork_errno));
  int child_errno = 0;
  ssize_t n = 0;
  do {
    n = ::read(errpipe->read.get(), &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  if (n == sizeof child_errno) {
    // The child already exited 127; the caller reaps it as usual.
    if (child_errno >= kBindFailure)
      return make_error("cannot bind to cpus " +
                        (req.binding ? req.binding->cpu_list : std::string("?")) + ": " +
                        std::strerror(child_errno - kBindFailure));
    if (child_errno < 0)
      return make_error("cannot change to working directory '" + req.wdir +
                        "': " + std::strerror(-child_errno));
    return make_error(exec_failure(req.path, req.wdir, child_errno), child_errno);
  }
  return pid;
}

}  // namespace ferry
