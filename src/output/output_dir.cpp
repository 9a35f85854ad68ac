#include "ferry/output/output_dir.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ferry/common/printable.hpp"

namespace ferry {
namespace {

std::string user_name(uid_t uid) {
  if (const passwd* pw = ::getpwuid(uid)) return pw->pw_name;
  return "uid " + std::to_string(uid);
}

std::string absolute(const std::string& dir) {
  if (!dir.empty() && dir.front() == '/') return dir;
  std::vector<char> buf(PATH_MAX);
  if (!::getcwd(buf.data(), buf.size())) return dir;
  return std::string(buf.data()) + "/" + dir;
}

// Why another user could change `path` (st): "" when none can. `last`: the output
// directory itself; `below_sticky`: a world-writable sticky directory is above it.
std::string foreign_control(const std::string& path, const struct stat& st, bool last,
                            bool below_sticky) {
  const bool sticky = (st.st_mode & S_ISVTX) != 0;
  const bool world_writable = (st.st_mode & S_IWOTH) != 0;
  const bool group_writable = (st.st_mode & S_IWGRP) != 0 && st.st_gid != ::getegid();
  if (world_writable && (last || !sticky))
    return "directory " + path + " is writable by every user";
  if (!last && !below_sticky) return "";
  if (st.st_uid != ::geteuid() && st.st_uid != 0)
    return "directory " + path + " belongs to " + user_name(st.st_uid);
  if (group_writable && !sticky)
    return "directory " + path + " is writable by group " + std::to_string(st.st_gid);
  return "";
}

// "/", "/a", "/a/b" for "/a/b".
std::vector<std::string> prefixes(const std::string& path) {
  std::vector<std::string> out{"/"};
  if (path.size() <= 1) return out;
  for (size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
    out.push_back(path.substr(0, slash));
    if (slash == std::string::npos) return out;
  }
}

// Walks the existing directories of `path` from "/" (symlinks resolved), checking each;
// `is_output_dir`: `path` is the output directory itself, not a parent of it.
Status check_existing(const std::string& path, bool is_output_dir) {
  char resolved[PATH_MAX];
  if (!::realpath(path.c_str(), resolved))
    return make_error("cannot resolve " + printable(path) + ": " + std::strerror(errno));
  const auto dirs = prefixes(resolved);
  bool below_sticky = false;
  for (size_t i = 0; i < dirs.size(); ++i) {
    const std::string shown = printable(dirs[i]);
    struct stat st {};
    if (::stat(dirs[i].c_str(), &st) != 0)
      return make_error("cannot look at " + shown + ": " + std::strerror(errno));
    if (!S_ISDIR(st.st_mode)) return make_error(shown + " is not a directory");
    if (auto why = foreign_control(shown, st, is_output_dir && i + 1 == dirs.size(), below_sticky);
        !why.empty())
      return make_error(why);
    if ((st.st_mode & S_ISVTX) && (st.st_mode & S_IWOTH)) below_sticky = true;
  }
  return {};
}

// Creates the missing directories of `path` (0700), parents first.
Status make_missing(const std::string& path) {
  for (size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
    const std::string part = path.substr(0, slash);
    if (!part.empty() && part.back() != '/' && ::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST)
      return make_error("cannot create directory " + part + ": " + std::strerror(errno));
    if (slash == std::string::npos) return {};
  }
}

// A file made and removed at once: the directory takes new files.
Status probe_writable(const std::string& path) {
  std::string name = path + "/.ferry-probe-XXXXXX";
  const int fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) return make_error("cannot create files in " + path + ": " + std::strerror(errno));
  ::close(fd);
  ::unlink(name.c_str());
  return {};
}

}  // namespace

Status prepare_output_dir(const std::string& dir) {
  const std::string path = absolute(dir);
  // The part that exists is checked before anything is made in it.
  std::string existing = path;
  while (existing.size() > 1 && ::access(existing.c_str(), F_OK) != 0) {
    const size_t slash = existing.find_last_of('/');
    existing = slash == 0 ? "/" : existing.substr(0, slash);
  }
  auto fail = [&dir](const Error& e) { return make_error(printable(dir) + ": " + e.message); };
  if (Status st = check_existing(existing, existing == path); !st) return fail(st.error());
  if (Status st = make_missing(path); !st) return fail(st.error());
  if (Status st = check_existing(path, true); !st) return fail(st.error());
  if (Status st = probe_writable(path); !st) return fail(st.error());
  return {};
}

}  // namespace ferry
