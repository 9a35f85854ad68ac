// Directories of the user's own.
#include "ferry/common/private_dir.hpp"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace ferry {

Status make_private_dir(const std::string& path, std::string_view what) {
  // Each missing directory made 0700 (not the umask's 0755): ~/.cache/ferry made here is then
  // as private as shipping ferryd wants it. One that is there already (every time but the
  // first) costs one lstat, not a mkdir per part of its path.
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    std::string prefix;
    for (const auto& part : std::filesystem::path(path)) {
      prefix =
          prefix.empty() || prefix == "/" ? prefix + part.string() : prefix + "/" + part.string();
      if (prefix.empty() || ::mkdir(prefix.c_str(), 0700) == 0 || errno == EEXIST) continue;
      return make_error(path + ": cannot create: " + std::strerror(errno));
    }
    if (::lstat(path.c_str(), &st) != 0) return make_error(path + ": " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) return make_error(path + ": not a directory");
  if (st.st_uid != ::geteuid())
    return make_error(path + ": owned by uid " + std::to_string(st.st_uid) +
                      ", not by you: ferry keeps " + std::string(what) +
                      " only in a directory of your own");
  if ((st.st_mode & 022) != 0)
    return make_error(path + ": writable by others (mode " + std::to_string((st.st_mode >> 6) & 7) +
                      std::to_string((st.st_mode >> 3) & 7) + std::to_string(st.st_mode & 7) +
                      "); chmod 700 it");
  if ((st.st_mode & 077) != 0 && ::chmod(path.c_str(), 0700) != 0)
    return make_error(path + ": cannot make it private: " + std::strerror(errno));
  return {};
}

namespace {

// `<state>`: $XDG_STATE_HOME when absolute, else HOME/.local/state.
Result<std::string> state_base(const std::string& home, const std::string& xdg_state_home,
                               std::string_view what) {
  if (!xdg_state_home.empty() && xdg_state_home.front() == '/') return xdg_state_home;
  if (!home.empty()) return home + "/.local/state";
  return make_error("no home directory to keep " + std::string(what) +
                    " in (set HOME or XDG_STATE_HOME)");
}

Result<std::string> this_users_base(std::string_view what) {
  const char* home = std::getenv("HOME");
  std::string h = home ? home : "";
  if (h.empty())
    if (const passwd* pw = ::getpwuid(::geteuid())) h = pw->pw_dir;
  const char* xdg = std::getenv("XDG_STATE_HOME");
  return state_base(h, xdg ? xdg : "", what);
}

Result<std::string> make_state_dir(const std::string& base, const std::string& name,
                                   std::string_view what) {
  const std::string dir = base + "/ferry/" + name;
  if (Status st = make_private_dir(dir, what); !st) return st.error();
  // The ferry directory above holds only such directories: private too.
  if (Status st = make_private_dir(base + "/ferry", what); !st) return st.error();
  return dir;
}

}  // namespace

Result<std::string> ferry_state_dir(const std::string& home, const std::string& xdg_state_home,
                                    const std::string& name, std::string_view what) {
  auto base = state_base(home, xdg_state_home, what);
  if (!base) return base.error();
  return make_state_dir(*base, name, what);
}

Result<std::string> ferry_state_dir(const std::string& name, std::string_view what) {
  auto base = this_users_base(what);
  if (!base) return base.error();
  return make_state_dir(*base, name, what);
}

Result<std::string> ferry_state_path(const std::string& name, std::string_view what) {
  auto base = this_users_base(what);
  if (!base) return base.error();
  return *base + "/ferry/" + name;
}

}  // namespace ferry
