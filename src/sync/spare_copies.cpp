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
#include <set>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "copy_out.hpp"
#include "ferry/common/posix_handles.hpp"
#include "ferry/common/private_dir.hpp"
#include "ferry/common/random_bytes.hpp"
#include "ferry/sync/file_cache.hpp"

namespace ferry {

namespace fs = std::filesystem;

namespace {

int64_t time_ns(const timespec& t) { return t.tv_sec * 1'000'000'000LL + t.tv_nsec; }

// "CTIME:INO:SIZE" (a directory's size 0: it changes with its names, which are checked apart).
std::string_view stamp_chars(const struct stat& st, std::array<char, 64>& buf) {
  char* p = buf.data();
  char* const end = buf.data() + buf.size();
  p = std::to_chars(p, end, time_ns(st.st_ctim)).ptr;
  *p++ = ':';
  p = std::to_chars(p, end, static_cast<uint64_t>(st.st_ino)).ptr;
  *p++ = ':';
  p = std::to_chars(p, end, S_ISDIR(st.st_mode) ? int64_t{0} : int64_t{st.st_size}).ptr;
  return {buf.data(), static_cast<size_t>(p - buf.data())};
}

std::string stamp_text(const struct stat& st) {
  std::array<char, 64> buf{};
  return std::string(stamp_chars(st, buf));
}

// The lines of a stamps file; none when it cannot be read.
std::vector<std::string> read_stamps(const std::string& file) {
  std::vector<std::string> lines;
  UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return lines;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return lines;
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd.get(), text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  text.resize(got);
  lines.reserve(static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + 1);
  std::string_view rest = text;
  while (!rest.empty()) {
    const size_t nl = std::min(rest.find('\n'), rest.size());
    lines.emplace_back(rest.substr(0, nl));
    rest.remove_prefix(std::min(nl + 1, rest.size()));
  }
  return lines;
}

// Stats entries of a copy by their paths inside it, relative to the open directory that holds
// each (entries come in tree order: a directory's names one after another), not by a walk from
// the copy's top every time. Intermediate links are followed as fstatat from the top would.
class CopyStatter {
 public:
  explicit CopyStatter(int top) : top_(top) {}

  bool stat(std::string_view path, struct stat& st) {
    const size_t slash = path.rfind('/');
    const std::string_view parent = slash == std::string_view::npos ? "" : path.substr(0, slash);
    name_.assign(slash == std::string_view::npos ? path : path.substr(slash + 1));
    int dir = top_;
    if (!parent.empty()) {
      if (!dir_ || parent != parent_) {
        parent_.assign(parent);
        dir_.reset(::openat(top_, parent_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        if (!dir_) return false;
      }
      dir = dir_.get();
    }
    return ::fstatat(dir, name_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
  }

 private:
  int top_;
  UniqueFd dir_;
  std::string parent_, name_;
};

// Returns once the clock is past the tick of `newest` (a change time): any later change gets a
// later change time, so a stamp taken now tells it.
void wait_past(int64_t newest) {
  for (int i = 0; i < 100; ++i) {
    timespec now{};
    ::clock_gettime(CLOCK_REALTIME_COARSE, &now);
    if (time_ns(now) > newest) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
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

// An entry as its spare's stamps file holds it, after its stamp: its path (with its length:
// a name may hold spaces), then kind, mode, size, hash and target.
std::string describe(const TreeEntry& e) {
  return std::to_string(e.path.size()) + ':' + e.path + ' ' +
         std::to_string(static_cast<int>(e.kind)) + ' ' + std::to_string(e.mode) + ' ' +
         std::to_string(e.size) + ' ' + e.hash + ' ' + e.target;
}

// The path in a line of a stamps file, "STAMP LEN:PATH REST" ("" when it is not one).
std::string_view stamp_line_path(const std::string& line) {
  const size_t sp = line.find(' ');
  if (sp == std::string::npos) return {};
  char* end = nullptr;
  const size_t len = std::strtoull(line.c_str() + sp + 1, &end, 10);
  const auto at = static_cast<size_t>(end - line.c_str());
  if (len == 0 || at >= line.size() || line[at] != ':' || at + 1 + len > line.size()) return {};
  return std::string_view(line).substr(at + 1, len);
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

FileCache::CopyStamps FileCache::stamp_copy(const std::string& path,
                                            const std::vector<TreeEntry>& entries) {
  CopyStamps out;
  out.reserve(entries.size());
  int64_t newest = 0;
  for (const TreeEntry& e : entries) {
    struct stat st {};
    if (::lstat((path + "/" + e.path).c_str(), &st) != 0) return {};
    newest = std::max(newest, time_ns(st.st_ctim));
    out.push_back(stamp_text(st) + ' ' + describe(e));
  }
  wait_past(newest);
  return out;
}

FileCache::CopyStamps FileCache::restamp_copy(const SpareCopy& spare,
                                              const std::vector<TreeEntry>& entries) {
  // What mend_spare() touched: the changed entries and the directories holding them (opened
  // to be written, pruned); the top is not an entry.
  std::unordered_set<std::string> touched;
  for (size_t i : spare.changed) {
    touched.insert(entries[i].path);
    touched.insert(parent_of(entries[i].path));
  }
  std::unordered_map<std::string_view, const std::string*> kept;
  kept.reserve(spare.stamps.size());
  for (const std::string& line : spare.stamps) kept.emplace(stamp_line_path(line), &line);
  UniqueFd top(::open(spare.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!top) return {};
  CopyStamps out;
  out.reserve(entries.size());
  int64_t newest = 0;
  for (const TreeEntry& e : entries) {
    auto k = kept.find(e.path);
    if (k != kept.end() && !touched.contains(e.path)) {
      out.push_back(*k->second);  // as take_spare() found it: untouched since
      continue;
    }
    struct stat st {};
    if (::fstatat(top.get(), e.path.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return {};
    newest = std::max(newest, time_ns(st.st_ctim));
    out.push_back(stamp_text(st) + ' ' + describe(e));
  }
  wait_past(newest);
  return out;
}

void FileCache::keep_spare(const std::string& path, const std::string& digest,
                           const CopyStamps& stamps, const std::string& stamps_file) const {
  const std::string dir = base_ + "/spares";
  auto suffix = random_bytes(4);
  const bool one_line_each = std::none_of(stamps.begin(), stamps.end(), [](const std::string& l) {
    return l.find('\n') != std::string::npos;
  });
  if (stamps.empty() || digest.empty() || !suffix || !one_line_each ||
      !make_private_dir(dir, "spare copies of synced trees")) {
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
    if (!written) {
      std::ofstream out(tmp, std::ios::trunc);
      for (const std::string& s : stamps) out << s << '\n';
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
  std::reverse(kept.begin(), kept.end());  // the newest first
  for (const std::string& k : kept) {
    if (!k.starts_with(digest + "-")) continue;
    const std::string at = dir + "/" + k;
    SpareCopy spare;
    spare.stamps = read_stamps(at + ".stamps");
    if (spare.stamps.empty()) continue;
    // Untouched: every entry's stamp as kept, and the top holds no other name.
    UniqueFd top(::open(at.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!top) continue;
    CopyStatter statter(top.get());
    std::set<std::string_view> top_names;
    bool same = true;
    std::array<char, 64> buf{};
    for (const std::string& line : spare.stamps) {
      const std::string_view path = stamp_line_path(line);
      struct stat st {};
      if (path.empty() || !statter.stat(path, st) ||
          std::string_view(line).substr(0, line.find(' ')) != stamp_chars(st, buf)) {
        same = false;
        break;
      }
      if (path.find('/') == std::string_view::npos) top_names.insert(path);
    }
    if (same) {
      DIR* d = ::fdopendir(::dup(top.get()));
      while (const dirent* ent = d ? ::readdir(d) : nullptr) {
        const std::string_view n = ent->d_name;
        if (n != "." && n != ".." && !top_names.contains(n)) same = false;
      }
      if (d) ::closedir(d);
    }
    if (!same) return std::nullopt;  // an offer takes it and mends it
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
  // Stat-ed from the copy's directory: no walk of the cache's path for each.
  UniqueFd top(::open(spare.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  std::string line;
  for (size_t i = 0; i < entries.size(); ++i) {
    const TreeEntry& e = entries[i];
    auto w = was.find(e.path);
    struct stat st {};
    if (w != was.end()) kept_now[w->second] = true;
    bool same = w != was.end() && top &&
                ::fstatat(top.get(), e.path.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                kind_is(st, e.kind);
    if (same) {
      line = stamp_text(st);
      line += ' ';
      line += describe(e);
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
