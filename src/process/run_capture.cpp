#include "ferry/process/run_capture.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "ferry/common/posix_handles.hpp"
#include "ferry/process/spawn.hpp"

namespace ferry {

Result<std::string> run_shell_capture(const std::string& command) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return make_error(command + ": pipe: " + std::strerror(errno));
  UniqueFd rd(fds[0]), wr(fds[1]);
  UniqueFd null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  SpawnRequest req;
  req.path = "/bin/sh";
  req.argv = {"sh", "-c", command};
  for (char** e = environ; *e; ++e) req.env.emplace_back(*e);
  req.stdin_fd = null.get();
  req.stdout_fd = wr.get();
  req.stderr_fd = 2;
  auto pid = spawn_process(req);
  if (!pid) return make_error(command + ": " + pid.error().message);
  wr = UniqueFd();
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(rd.get(), buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  int status = 0;
  while (::waitpid(*pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status))
    return make_error(command + ": killed by signal " + std::to_string(WTERMSIG(status)));
  if (WEXITSTATUS(status) != 0)
    return make_error(command + ": exit status " + std::to_string(WEXITSTATUS(status)));
  return out;
}

Result<std::string> run_capture_limited(const std::vector<std::string>& argv,
                                        std::chrono::milliseconds limit) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return make_error(argv[0] + ": pipe: " + std::strerror(errno));
  UniqueFd rd(fds[0]), wr(fds[1]);
  UniqueFd null(::open("/dev/null", O_RDWR | O_CLOEXEC));
  SpawnRequest req;
  req.argv = argv;
  for (char** e = environ; *e; ++e) req.env.emplace_back(*e);
  auto path = resolve_command(argv[0], req.env, "");
  if (!path) return path.error();
  req.path = *path;
  req.stdin_fd = null.get();
  req.stdout_fd = wr.get();
  req.stderr_fd = null.get();
  auto pid = spawn_process(req);
  if (!pid) return make_error(argv[0] + ": " + pid.error().message);
  wr = UniqueFd();
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::string out;
  char buf[4096];
  bool timed_out = false;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{rd.get(), POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) == 0) {
      timed_out = true;
      break;
    }
    ssize_t n = ::read(rd.get(), buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  if (timed_out) ::kill(*pid, SIGKILL);
  int status = 0;
  while (::waitpid(*pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out)
    return make_error(argv[0] + " gave no answer within " + std::to_string(limit.count() / 1000) +
                      " s");
  return out;
}

}  // namespace ferry
