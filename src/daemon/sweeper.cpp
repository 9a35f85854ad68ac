#include "ferry/daemon/sweeper.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <thread>

#include "ferry/common/environ.hpp"

namespace ferry {

std::vector<pid_t> find_tagged_processes(const std::string& job_id, pid_t self,
                                         const std::string& proc_root) {
  std::vector<pid_t> out;
  if (job_id.empty()) return out;
  const std::string entry = std::string(kJobTagVar) + "=" + job_id;  // a whole entry
  for_each_environ(proc_root, [&](pid_t pid, const std::vector<std::string>& env) {
    if (pid != self && std::find(env.begin(), env.end(), entry) != env.end()) out.push_back(pid);
    return true;
  });
  return out;
}

int sweep_job(const std::string& job_id, const std::vector<pid_t>& pgids,
              std::chrono::milliseconds limit) {
  using Clock = std::chrono::steady_clock;
  constexpr auto kGap = std::chrono::milliseconds(10);
  const auto deadline = Clock::now() + limit;
  int killed = 0;
  for (pid_t g : pgids)
    if (g > 0 && ::kill(-g, SIGKILL) == 0) ++killed;
  // A process may fork while being swept: repeat until a pass finds nothing (bounded).
  for (int pass = 0; pass < 20; ++pass) {
    auto pids = find_tagged_processes(job_id, ::getpid());
    if (pids.empty()) break;
    for (pid_t p : pids)
      if (::kill(p, SIGKILL) == 0) ++killed;
    if (Clock::now() + kGap > deadline) break;
    std::this_thread::sleep_for(kGap);
  }
  return killed;
}

bool Guard::start() {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return false;
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(p[0]);
    ::close(p[1]);
    return false;
  }
  if (pid > 0) {
    ::close(p[0]);
    fd_ = p[1];
    return true;
  }
  // Guard child: only read the pipe until EOF, then sweep. It must survive the signals
  // that kill ferryd's session, so it ignores them and leaves ferryd's process group.
  ::close(p[1]);
  // Hold nothing of ferryd's: its stdio (the link to ferryrun) must close when it dies.
  ::close_range(3, p[0] - 1, 0);
  ::close_range(p[0] + 1, ~0U, 0);
  ::setsid();
  ::prctl(PR_SET_NAME, "ferryd-guard");
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT}) ::signal(s, SIG_IGN);
  for (int fd = 0; fd < 3; ++fd) {
    int null = ::open("/dev/null", O_RDWR);
    if (null >= 0 && null != fd) {
      ::dup2(null, fd);
      ::close(null);
    }
  }
  std::string job_id;
  std::vector<pid_t> pgids;
  std::vector<std::string> dirs;
  std::string buf;
  bool released = false;
  char chunk[4096];
  for (;;) {
    ssize_t n = ::read(p[0], chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    buf.append(chunk, static_cast<size_t>(n));
    size_t nl = 0;
    while ((nl = buf.find('\n')) != std::string::npos) {
      std::string line = buf.substr(0, nl);
      buf.erase(0, nl + 1);
      if (line.starts_with("job ")) job_id = line.substr(4);
      if (line.starts_with("pgid ")) pgids.push_back(std::atoi(line.c_str() + 5));
      if (line == "forget") pgids.clear();
      if (line == "release") released = true;
      if (line.starts_with("dir ")) dirs.push_back(line.substr(4));
    }
  }
  if (released) _exit(0);
  sweep_job(job_id, pgids, std::chrono::seconds(2));  // no loop to hold up here
  for (const auto& d : dirs) {
    std::error_code ignored;
    std::filesystem::remove_all(d, ignored);
  }
  _exit(0);
}

void Guard::send(const std::string& line) {
  if (fd_ < 0) return;
  ssize_t ignored = ::write(fd_, line.data(), line.size());
  (void)ignored;
}

void Guard::set_job(const std::string& job_id) { send("job " + job_id + "\n"); }

void Guard::add_pgid(pid_t pgid) { send("pgid " + std::to_string(pgid) + "\n"); }

void Guard::forget_pgids() { send("forget\n"); }

void Guard::add_dir(const std::string& path) {
  if (path.find('\n') == std::string::npos) send("dir " + path + "\n");
}

void Guard::release() { send("release\n"); }

Guard::~Guard() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace ferry
