// Spare copies: a job's copy kept when its ferryd ends, and taken by the next job of the same
// tree on the host instead of copying every file out of the cache again. What its job changed
// is found by the stamps taken when it was made (change time, inode, size of every entry: a
// write, chmod, link, rename, or a name added or removed below a directory changes one) and
// made again; names the tree does not have are removed. The copy the next job gets is exactly
// what materialize() would have made.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "copy_out.hpp"
#include "ferry/common/private_dir.hpp"
#include "ferry/common/random_bytes.hpp"
#include "ferry/sync/file_cache.hpp"
#include "ferry/transport/content_hash.hpp"

namespace ferry {

namespace fs = std::filesystem;

namespace {

int64_t ns_of(const timespec& t) { return t.tv_sec * 1'000'000'000LL + t.tv_nsec; }

std::string stamp_text(const struct stat& st) {
  return std::to_string(ns_of(st.st_ctim)) + ":" + std::to_string(st.st_ino) + ":" +
         std::to_string(S_ISDIR(st.st_mode) ? 0 : st.st_size);
}

bool kind_is(const struct stat& st, TreeEntry::Kind k) {
  switch (k) {
    case TreeEntry::Kind::kDirectory:
      return S_ISDIR(st.st_mode);
    case TreeEntry::Kind::kSymlink:
      return S_ISLNK(st.st_mode);
    case TreeEntry::Kind::kFile:
      return S_ISREG(st.st_mode);
  }
  return false;
}

std::string parent_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

std::string name_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Removes what `dir` holds that is not among `names`.
void prune(const std::string& dir, const std::set<std::string>& names) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  std::vector<std::string> extra;
  while (const dirent* ent = ::readdir(d)) {
    const std::string n = ent->d_name;
    if (n != "." && n != ".." && !names.contains(n)) extra.push_back(n);
  }
  ::closedir(d);
  for (const std::string& n : extra) FileCache::remove_copy(dir + "/" + n);
}

// The spares under `dir` by age, oldest first: their names (each with NAME.stamps beside it).
std::vector<std::string> spares_by_age(const std::string& dir) {
  std::vector<std::pair<time_t, std::string>> found;
  std::error_code ec;
  for (const auto& f : fs::directory_iterator(dir, ec)) {
    const std::string n = f.path().filename().string();
    if (!n.ends_with(".stamps")) continue;
    struct stat st {};
    if (::stat(f.path().c_str(), &st) == 0)
      found.emplace_back(st.st_mtime, n.substr(0, n.size() - 7));
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& [t, n] : found) out.push_back(std::move(n));
  return out;
}

}  // namespace

void FileCache::evict_spares(int64_t max_age_s, bool all) const {
  const std::string dir = base_ + "/spares";
  const time_t now = std::time(nullptr);
  std::error_code ec;
  for (const auto& f : fs::directory_iterator(dir, ec)) {
    const std::string n = f.path().filename().string();
    struct stat st {};
    if (::lstat(f.path().c_str(), &st) != 0) continue;
    const bool old = now - st.st_mtime > (max_age_s > 0 ? max_age_s : 3600);
    if (n.ends_with(".stamps")) {
      const std::string copy = dir + "/" + n.substr(0, n.size() - 7);
      if (all || (max_age_s > 0 && old) || ::access(copy.c_str(), F_OK) != 0) {
        ::unlink(f.path().c_str());
        remove_copy(copy);
      }
    } else if (S_ISDIR(st.st_mode) && (all || (old && ::access((f.path().string() + ".stamps").c_str(), F_OK) != 0))) {
      remove_copy(f.path().string());  // kept half way (its stamps never written)
    } else if (n.ends_with(".tmp") && (all || old)) {
      ::unlink(f.path().c_str());
    }
  }
}

std::string tree_digest(const std::vector<TreeEntry>& entries) {
  std::string all;
  for (const TreeEntry& e : entries) {
    all += std::to_string(static_cast<int>(e.kind)) + ' ' + std::to_string(e.mode) + ' ' +
           e.hash + ' ' + e.target + '\0' + e.path + '\0';
  }
  auto h = bytes_sha256(all);
  return h ? *h : "";
}

FileCache::CopyStamps FileCache::stamp_copy(const std::string& path,
                                            const std::vector<TreeEntry>& entries) {
  CopyStamps out;
  out.reserve(entries.size());
  int64_t newest = 0;
  for (const TreeEntry& e : entries) {
    struct stat st {};
    if (::lstat((path + "/" + e.path).c_str(), &st) != 0) return {};
    newest = std::max(newest, ns_of(st.st_ctim));
    out.push_back(stamp_text(st));
  }
  // Past the clock tick of the last change: any later one gets a later change time.
  for (int i = 0; i < 100; ++i) {
    timespec now{};
    ::clock_gettime(CLOCK_REALTIME_COARSE, &now);
    if (ns_of(now) > newest) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return out;
}

void FileCache::keep_spare(const std::string& path, const std::string& digest,
                           const CopyStamps& stamps) const {
  const std::string dir = base_ + "/spares";
  auto suffix = random_bytes(4);
  if (stamps.empty() || digest.empty() || !suffix ||
      !make_private_dir(dir, "spare copies of synced trees")) {
    remove_copy(path);
    return;
  }
  const std::string name = dir + "/" + digest + "-" + hex_text(*suffix);
  {
    std::ofstream out(name + ".stamps.tmp", std::ios::trunc);
    for (const std::string& s : stamps) out << s << '\n';
    if (!out.flush() || ::rename(path.c_str(), name.c_str()) != 0) {
      ::unlink((name + ".stamps.tmp").c_str());
      remove_copy(path);
      return;
    }
  }
  ::rename((name + ".stamps.tmp").c_str(), (name + ".stamps").c_str());
  std::vector<std::string> old = spares_by_age(dir);
  for (size_t i = 0; i + kSpares < old.size(); ++i) {
    ::unlink((dir + "/" + old[i] + ".stamps").c_str());
    remove_copy(dir + "/" + old[i]);
  }
}

std::string FileCache::reuse_spare(const std::vector<TreeEntry>& entries,
                                   const std::string& digest, const std::string& name,
                                   size_t* mended) const {
  const std::string dir = base_ + "/spares", root = base_ + "/jobs/" + name;
  CopyStamps stamps;
  for (const std::string& s : spares_by_age(dir)) {
    if (!s.starts_with(digest + "-")) continue;
    // Taken: renamed away, so no other job can take it too.
    if (::rename((dir + "/" + s).c_str(), root.c_str()) != 0) continue;
    std::ifstream in(dir + "/" + s + ".stamps");
    for (std::string line; std::getline(in, line);) stamps.push_back(line);
    ::unlink((dir + "/" + s + ".stamps").c_str());
    break;
  }
  if (stamps.empty()) return "";
  if (stamps.size() != entries.size()) {
    remove_copy(root);
    return "";
  }
  std::map<std::string, std::set<std::string>> names;  // by directory
  for (const TreeEntry& e : entries) names[parent_of(e.path)].insert(name_of(e.path));
  ::chmod(root.c_str(), 0700);
  prune(root, names[""]);
  std::vector<const TreeEntry*> opened;  // directories given 0700 while mended
  size_t made = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const TreeEntry& e = entries[i];
    const std::string to = root + "/" + e.path;
    struct stat st {};
    const bool there = ::lstat(to.c_str(), &st) == 0;
    if (there && kind_is(st, e.kind) && stamp_text(st) == stamps[i]) {
      // The cached file is in use still (eviction goes by its access time).
      static constexpr timespec kUsed[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
      if (e.kind == TreeEntry::Kind::kFile)
        ::utimensat(AT_FDCWD, file_path(e.hash).c_str(), kUsed, 0);
      continue;
    }
    ++made;
    bool ok = true;
    if (e.kind == TreeEntry::Kind::kDirectory) {
      if (there && !S_ISDIR(st.st_mode)) remove_copy(to);
      ok = (there && S_ISDIR(st.st_mode)) ? ::chmod(to.c_str(), 0700) == 0
                                          : ::mkdir(to.c_str(), 0700) == 0;
      if (ok) prune(to, names[e.path]);
      opened.push_back(&e);
    } else {
      if (there) remove_copy(to);
      ok = e.kind == TreeEntry::Kind::kSymlink
               ? ::symlink(e.target.c_str(), to.c_str()) == 0
               : sync_detail::copy_out(file_path(e.hash), to, e.mode).ok();
    }
    if (!ok) {
      remove_copy(root);
      return "";
    }
  }
  std::reverse(opened.begin(), opened.end());
  for (const TreeEntry* d : opened) ::chmod((root + "/" + d->path).c_str(), d->mode);
  if (mended) *mended = made;
  return root;
}

}  // namespace ferry
