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
#include <array>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "copy_out.hpp"
#include "copy_stamps.hpp"
#include "ferry/common/posix_handles.hpp"
#include "ferry/common/private_dir.hpp"
#include "ferry/common/random_bytes.hpp"
#include "ferry/sync/file_cache.hpp"
#include "ferry/sync/spare_watch.hpp"

namespace ferry {

namespace fs = std::filesystem;
using namespace sync_detail;  // NOLINT(google-build-using-namespace): this part's own helpers

namespace {

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
  out.reserve(found.size());
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
    } else if (S_ISDIR(st.st_mode) &&
               (all || (old && ::access((f.path().string() + ".stamps").c_str(), F_OK) != 0))) {
      remove_copy(f.path().string());  // kept half way (its stamps never written)
    } else if (n.ends_with(".tmp") && (all || old)) {
      ::unlink(f.path().c_str());
    }
  }
}

void FileCache::keep_spare(const std::string& path, const std::string& digest,
                           const CopyStamps& stamps, const std::string& stamps_file) const {
  const std::string dir = base_ + "/spares";
  auto suffix = random_bytes(4);
  const std::string_view text = stamps.text();
  // A spare taken on the watch's word comes with its stamps file alone (not read).
  if ((stamps.empty() && stamps_file.empty()) || digest.empty() || !suffix ||
      !stamps.whole_lines() || !make_private_dir(dir, "spare copies of synced trees")) {
    if (!stamps_file.empty()) ::unlink(stamps_file.c_str());
    remove_copy(path);
    return;
  }
  const std::string name = dir + "/" + digest + "-" + hex_text(*suffix);
  {
    // The file the spare was taken with holds these stamps already: kept again as it is (no
    // new inode, none freed), its time now, the newest spare's. Else written.
    const std::string tmp = name + ".stamps.tmp";
    bool written = !stamps_file.empty() && ::rename(stamps_file.c_str(), tmp.c_str()) == 0 &&
                   ::utimensat(AT_FDCWD, tmp.c_str(), nullptr, 0) == 0;
    if (!written && !stamps.empty()) {
      std::ofstream out(tmp, std::ios::trunc);
      out << text;
      written = static_cast<bool>(out.flush());
    }
    if (!written || ::rename(path.c_str(), name.c_str()) != 0) {
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

std::optional<FileCache::SpareCopy> FileCache::take_untouched_spare(const std::string& digest,
                                                                    const std::string& name) const {
  const std::string dir = base_ + "/spares";
  std::vector<std::string> kept = spares_by_age(dir);
  std::erase_if(kept, [&digest](const std::string& k) { return !k.starts_with(digest + "-"); });
  std::reverse(kept.begin(), kept.end());  // the newest first
  // Untouched as the host's watch saw it (watched since before a check like copy_untouched(),
  // no change since): the newest such spare, asked about newest first, and its stamps not
  // read (their file is kept again as it is). Else the newest, checked here (a stat per entry).
  size_t pick = 0;
  bool watched = false;
  for (size_t i = 0; i < kept.size() && !watched; ++i)
    if (spare_watch_untouched(base_, kept[i])) {
      pick = i;
      watched = true;
    }
  for (size_t i = pick; i < kept.size(); ++i) {
    const std::string& k = kept[i];
    const std::string at = dir + "/" + k;
    SpareCopy spare;
    const bool vouched = watched && i == pick;
    if (!vouched) {  // the newest, or the next after a vouched one another job took
      spare.stamps = read_stamps(at + ".stamps");
      if (spare.stamps.empty()) continue;
      if (!sync_detail::copy_untouched(at, spare.stamps))
        return std::nullopt;  // an offer takes it and mends it
    }
    spare.path = base_ + "/jobs/" + name;
    if (::rename(at.c_str(), spare.path.c_str()) != 0) continue;  // another job took it
    // Its stamps file waits beside, to be kept again with the copy; its time now, so that
    // eviction (of a .tmp an hour old) leaves it to the job.
    spare.stamps_file = dir + "/" + name + ".stamps.tmp";
    if (::rename((at + ".stamps").c_str(), spare.stamps_file.c_str()) != 0 ||
        ::utimensat(AT_FDCWD, spare.stamps_file.c_str(), nullptr, 0) != 0) {
      ::unlink((at + ".stamps").c_str());
      ::unlink(spare.stamps_file.c_str());
      spare.stamps_file.clear();
    }
    if (vouched && spare.stamps_file.empty()) {  // its stamps could not be set aside
      remove_copy(spare.path);
      return std::nullopt;
    }
    spare.watched = vouched;
    return spare;
  }
  return std::nullopt;
}

std::optional<FileCache::SpareCopy> FileCache::take_spare(const std::vector<TreeEntry>& entries,
                                                          const std::string& digest,
                                                          const std::string& name) const {
  // The newest spare of this tree, else the newest of any (an earlier version of it, most
  // likely): what differs is made again either way.
  const std::string dir = base_ + "/spares";
  std::vector<std::string> kept = spares_by_age(dir);
  // Those of this tree last, the newest last: tried from the back.
  std::stable_partition(kept.begin(), kept.end(),
                        [&](const std::string& s) { return !s.starts_with(digest + "-"); });
  std::reverse(kept.begin(), kept.end());
  SpareCopy spare;
  for (const std::string& k : kept) {
    // Taken: renamed away, so no other job can take it too.
    spare.path = base_ + "/jobs/" + name;
    if (::rename((dir + "/" + k).c_str(), spare.path.c_str()) != 0) continue;
    const std::string stamps = dir + "/" + k + ".stamps";
    struct stat st {};
    spare.stale_use = ::stat(stamps.c_str(), &st) == 0 && std::time(nullptr) - st.st_mtime > 86400;
    spare.stamps = read_stamps(stamps);
    ::unlink(stamps.c_str());
    break;
  }
  if (spare.stamps.empty()) return std::nullopt;
  // The spare's entries by path (views into its stamps), and whether this tree has each.
  std::unordered_map<std::string_view, size_t> was;
  was.reserve(spare.stamps.size());
  for (size_t j = 0; j < spare.stamps.size(); ++j) {
    const std::string_view path = stamp_line_path(spare.stamps[j]);
    if (path.empty()) {
      remove_copy(spare.path);
      return std::nullopt;
    }
    was.emplace(path, j);
  }
  std::vector<bool> kept_now(spare.stamps.size(), false);
  // Stat-ed from the directory that holds each (the entries come in tree order): no walk of
  // the cache's path for each, each directory opened once.
  UniqueFd top(::open(spare.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  std::optional<CopyStatter> statter;
  if (top) statter.emplace(top.get());
  std::string line;
  for (size_t i = 0; i < entries.size(); ++i) {
    const TreeEntry& e = entries[i];
    auto w = was.find(e.path);
    struct stat st {};
    if (w != was.end()) kept_now[w->second] = true;
    bool same = w != was.end() && statter && statter->stat(e.path, st) && kind_is(st, e.kind);
    if (same) {
      stamp_line(line, st, e);
      same = line == spare.stamps[w->second];
    }
    if (!same) spare.changed.push_back(i);
  }
  // A directory that held an entry this tree lacks: its names are checked again.
  std::set<std::string> to_prune;
  for (const auto& [path, j] : was)
    if (!kept_now[j]) to_prune.insert(parent_of(std::string(path)));
  if (!to_prune.empty()) {
    std::vector<bool> listed(entries.size(), false);
    for (size_t i : spare.changed) listed[i] = true;
    for (size_t i = 0; i < entries.size(); ++i)
      if (!listed[i] && to_prune.contains(entries[i].path)) spare.changed.push_back(i);
  }
  std::sort(spare.changed.begin(), spare.changed.end());  // parents before children
  return spare;
}

Status FileCache::mend_spare(const SpareCopy& spare, const std::vector<TreeEntry>& entries,
                             const StillWorking& still) const {
  sync_detail::Heartbeat alive(still);
  const std::string& root = spare.path;
  // The names each directory to mend holds, and the top's (always checked).
  std::map<std::string, std::set<std::string>> names{{"", {}}};
  for (size_t i : spare.changed)
    if (entries[i].kind == TreeEntry::Kind::kDirectory) names[entries[i].path];
  for (const TreeEntry& e : entries)
    if (auto n = names.find(parent_of(e.path)); n != names.end()) n->second.insert(name_of(e.path));
  ::chmod(root.c_str(), 0700);
  prune(root, names[""]);
  std::map<std::string, const TreeEntry*> dirs;
  if (!spare.changed.empty())
    for (const TreeEntry& e : entries)
      if (e.kind == TreeEntry::Kind::kDirectory) dirs[e.path] = &e;
  std::map<std::string, uint32_t> opened;  // directories given 0700 while mended: their modes
  auto open_dir = [&](const std::string& path) {
    auto d = dirs.find(path);
    if (d == dirs.end() || opened.contains(path)) return;
    ::chmod((root + "/" + path).c_str(), 0700);
    opened[path] = d->second->mode;
  };
  for (size_t i : spare.changed) {
    alive();
    const TreeEntry& e = entries[i];
    const std::string to = root + "/" + e.path;
    open_dir(parent_of(e.path));
    struct stat st {};
    const bool there = ::lstat(to.c_str(), &st) == 0;
    bool ok = true;
    if (e.kind == TreeEntry::Kind::kDirectory) {
      if (there && !S_ISDIR(st.st_mode)) remove_copy(to);
      ok = (there && S_ISDIR(st.st_mode)) ? ::chmod(to.c_str(), 0700) == 0
                                          : ::mkdir(to.c_str(), 0700) == 0;
      if (ok) prune(to, names[e.path]);
      opened[e.path] = e.mode;
    } else {
      if (there) remove_copy(to);
      ok = e.kind == TreeEntry::Kind::kSymlink
               ? ::symlink(e.target.c_str(), to.c_str()) == 0
               : sync_detail::copy_out(file_path(e.hash), to, e.mode).ok();
    }
    if (!ok) {
      const std::string why = to + ": " + std::strerror(errno);
      remove_copy(root);
      return make_error(why);
    }
  }
  // Their modes back, the deepest first (a child's path sorts after its parent's): a read-only
  // one is filled before it is.
  std::vector<std::pair<std::string, uint32_t>> modes(opened.rbegin(), opened.rend());
  for (const auto& [path, m] : modes) ::chmod((root + "/" + path).c_str(), m);
  // Its files are in use still (eviction goes by their access times): marked once a day.
  if (spare.stale_use) {
    static constexpr timespec kUsed[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
    for (const TreeEntry& e : entries)
      if (e.kind == TreeEntry::Kind::kFile)
        ::utimensat(AT_FDCWD, file_path(e.hash).c_str(), kUsed, 0);
  }
  return {};
}

std::string FileCache::reuse_spare(const std::vector<TreeEntry>& entries, const std::string& digest,
                                   const std::string& name, size_t* mended) const {
  auto spare = take_spare(entries, digest, name);
  if (!spare || !mend_spare(*spare, entries)) return "";
  if (mended) *mended = spare->changed.size();
  return spare->path;
}

}  // namespace ferry
