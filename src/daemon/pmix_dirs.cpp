// The PMIx server's private directories: their names, and the ones left by ferryds that died
// with their guard (see PmixServer::remove_stale_directories).
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <csignal>
#include <filesystem>
#include <string>
#include <string_view>

#include "ferry/daemon/pmix_server.hpp"

namespace ferry {
namespace {

constexpr std::string_view kPrefix = "ferry-pmix-";

// This process's pid namespace, as its inode number: a pid means a process only within it
// (containers that share /tmp with the host see pids of another namespace there).
std::string pid_namespace() {
  struct stat st {};
  if (::stat("/proc/self/ns/pid", &st) != 0) return "0";
  return std::to_string(st.st_ino);
}

// The pid in `name` ("ferry-pmix-<ns>-<pid>-XXXXXX") when `ns` is this namespace's; else 0.
pid_t pid_of(std::string_view name, const std::string& ns) {
  if (!name.starts_with(kPrefix)) return 0;
  name.remove_prefix(kPrefix.size());
  if (!name.starts_with(ns) || name.size() <= ns.size() || name[ns.size()] != '-') return 0;
  name.remove_prefix(ns.size() + 1);
  pid_t pid = 0;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), pid);
  if (ec != std::errc() || end == name.data() || *end != '-' || pid <= 0) return 0;
  return pid;
}

}  // namespace

std::string PmixServer::directory_prefix() {
  return std::string(kPrefix) + pid_namespace() + "-" + std::to_string(::getpid()) + "-";
}

int PmixServer::remove_stale_directories(const std::string& tmp_root) {
  DIR* d = ::opendir(tmp_root.c_str());
  if (!d) return 0;
  const std::string ns = pid_namespace();
  int removed = 0;
  while (const dirent* e = ::readdir(d)) {
    const pid_t pid = pid_of(e->d_name, ns);
    if (pid == 0 || pid == ::getpid()) continue;
    struct stat st {};
    const std::string path = tmp_root + "/" + e->d_name;
    if (::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid())
      continue;
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;  // running (or not ours to ask)
    std::error_code ignored;
    if (std::filesystem::remove_all(path, ignored) > 0) ++removed;
  }
  ::closedir(d);
  return removed;
}

}  // namespace ferry
