#include "ferry/daemon/sweeper.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "ferry/common/environ.hpp"
#include "ferry/common/read_text_file.hpp"

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

namespace {

// The PPid line of <proc_root>/<pid>/status; 0 when it cannot be read (the process is gone)
// or the process is a zombie (dead already: killing it again would find it in every pass).
pid_t parent_of(const std::string& proc_root, pid_t pid) {
  std::ifstream in(proc_root + "/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("State:") && line.find('Z') != std::string::npos) return 0;
    if (line.starts_with("PPid:")) return static_cast<pid_t>(std::atol(line.c_str() + 5));
  }
  return 0;
}

// Whether <proc_root>/<pid>/stat says the process is alive (not a zombie, not gone).
bool is_alive(const std::string& proc_root, pid_t pid) {
  auto stat = read_text_file(proc_root + "/" + std::to_string(pid) + "/stat", 4096, "stat file");
  if (!stat) return false;
  const auto fields = stat_fields(*stat);
  return !fields.empty() && fields[0] != "Z";
}

std::vector<pid_t> walk_children(pid_t root, const std::vector<pid_t>& spared,
                                 const std::string& proc_root) {
  std::vector<pid_t> out;
  std::set<pid_t> seen{root};
  std::vector<pid_t> todo{root};
  while (!todo.empty()) {
    const pid_t parent = todo.back();
    todo.pop_back();
    // A few reads per process of the job, where the scan reads two per process on the host.
    std::vector<pid_t> children;
    list_children(parent, children, proc_root);
    for (pid_t child : children) {
      if (!seen.insert(child).second) continue;
      if (std::find(spared.begin(), spared.end(), child) != spared.end()) continue;
      if (!is_alive(proc_root, child)) continue;
      out.push_back(child);
      todo.push_back(child);
    }
  }
  return out;
}

std::vector<pid_t> scan_parents(pid_t root, const std::vector<pid_t>& spared,
                                const std::string& proc_root) {
  std::vector<pid_t> out;
  auto pids = list_pids(proc_root);
  if (!pids) return out;
  std::multimap<pid_t, pid_t> children;  // parent -> child
  for (pid_t p : *pids) children.emplace(parent_of(proc_root, p), p);
  std::vector<pid_t> todo{root};
  while (!todo.empty()) {
    const pid_t parent = todo.back();
    todo.pop_back();
    auto [first, last] = children.equal_range(parent);
    for (auto it = first; it != last; ++it) {
      const pid_t child = it->second;
      if (child == root || std::find(spared.begin(), spared.end(), child) != spared.end()) continue;
      out.push_back(child);
      todo.push_back(child);
    }
  }
  return out;
}

}  // namespace

std::vector<pid_t> find_descendants(pid_t root, const std::vector<pid_t>& spared,
                                    const std::string& proc_root) {
  if (has_children_lists(root, proc_root)) return walk_children(root, spared, proc_root);
  return scan_parents(root, spared, proc_root);
}

int sweep_job(const std::string& job_id, const std::vector<pid_t>& pgids,
              std::chrono::milliseconds limit) {
  return sweep_job(job_id, pgids, SweepScope{}, limit);
}

int sweep_job(const std::string& job_id, const std::vector<pid_t>& pgids, const SweepScope& scope,
              std::chrono::milliseconds limit) {
  using Clock = std::chrono::steady_clock;
  constexpr auto kGap = std::chrono::milliseconds(10);
  const auto deadline = Clock::now() + limit;
  int killed = 0;
  for (pid_t g : pgids)
    if (g > 0 && ::kill(-g, SIGKILL) == 0) ++killed;
  // A process may fork while being swept: repeat until a pass finds nothing (bounded).
  for (int pass = 0; pass < 20; ++pass) {
    // Below a subreaper every process of the job is a descendant (docs/design.md, "What the
    // sweep cannot find"): the walk down the tree finds all the tag would, and costs what
    // the job has, not what the host runs. Without one, the tag it is.
    auto pids = scope.descendants ? find_descendants(::getpid(), scope.spared)
                                  : find_tagged_processes(job_id, ::getpid());
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
    pid_ = pid;
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
      if (line.starts_with("dir ")) dirs.push_back(line.substr(4));
      if (line == "forget") pgids.clear();
      if (line == "release") released = true;
    }
  }
  if (!released) sweep_job(job_id, pgids, std::chrono::seconds(2));  // no loop to hold up here
  std::error_code ignored;
  for (const auto& dir : dirs) std::filesystem::remove_all(dir, ignored);
  _exit(0);
}

void Guard::send(const std::string& line) {
  if (fd_ < 0) return;
  ssize_t ignored = ::write(fd_, line.data(), line.size());
  (void)ignored;
}

void Guard::set_job(const std::string& job_id) { send("job " + job_id + "\n"); }

void Guard::add_pgid(pid_t pgid) { send("pgid " + std::to_string(pgid) + "\n"); }

void Guard::remove_at_exit(const std::string& dir) { send("dir " + dir + "\n"); }

void Guard::forget_pgids() { send("forget\n"); }

void Guard::release() { send("release\n"); }

Guard::~Guard() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace ferry
