// A host's cache of synced files, and the jobs' copies made from it.
#include "ferry/sync/file_cache.hpp"

#include <fcntl.h>
#include <linux/fs.h>
#include <pwd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <set>

#include "copy_out.hpp"
#include "ferry/common/posix_handles.hpp"
#include "ferry/common/private_dir.hpp"
#include "ferry/common/random_bytes.hpp"
#include "ferry/sync/copy_builder.hpp"
#include "ferry/transport/content_hash.hpp"

namespace ferry {

namespace fs = std::filesystem;

namespace {

using sync_detail::errno_text;

bool is_hash(const std::string& h) {
  return h.size() == 64 && std::all_of(h.begin(), h.end(),
                                       [](char c) { return std::isxdigit(c) && !std::isupper(c); });
}

}  // namespace

Status sync_detail::copy_out(const std::string& from, const std::string& to, uint32_t mode) {
  std::error_code ec;
  fs::copy_file(from, to, fs::copy_options::none, ec);
  if (ec) return make_error(to + ": " + ec.message());
  if (::chmod(to.c_str(), mode) != 0) return make_error(to + ": " + errno_text());
  // The cached file's access time says when a job last used it (evict()); its modification
  // time stays, part of its stamp.
  const timespec used[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
  ::utimensat(AT_FDCWD, from.c_str(), used, 0);
  return {};
}

namespace {

// What a checked file looked like: size, modification time and inode. A write changes it.
std::string stamp_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  return std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec) + ":" + std::to_string(st.st_ino);
}

// Where a file's stamp is kept: an extended attribute of the file itself (no inode of its own:
// on a filesystem without a journal, ext4 makes each new inode dearer the more were deleted in
// the last minutes, which a cache's eviction and a job's spares do), else, where the
// filesystem has no user attributes (NFSv3, an old tmpfs) or refuses this one, `.HASH.ok`
// beside it.
constexpr const char* kStampAttr = "user.ferry.stamp";

std::string read_stamp_file(const std::string& path) {
  char buf[96];
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return "";
  const ssize_t n = ::read(fd.get(), buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

// Whether `file` was checked as it is now (`stamp`), by either record.
bool stamped(const std::string& file, const std::string& ok_file, const std::string& stamp) {
  char buf[96];
  const ssize_t n = ::getxattr(file.c_str(), kStampAttr, buf, sizeof buf);
  if (n > 0 && std::string_view(buf, static_cast<size_t>(n)) == stamp) return true;
  return read_stamp_file(ok_file) == stamp;
}

void write_stamp(const std::string& file, const std::string& ok_file, const std::string& stamp) {
  if (::setxattr(file.c_str(), kStampAttr, stamp.data(), stamp.size(), 0) == 0) return;
  UniqueFd fd(::open(ok_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (fd) (void)!::write(fd.get(), stamp.data(), stamp.size());
}

// Gives `dir` and everything under it its owner's write and search bits, so a copy whose ranks
// made parts read-only can still be removed.
void open_up(const std::string& dir) {
  std::error_code ec;
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return;  // never through a link
  ::chmod(dir.c_str(), 0700);
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->is_directory(ec) && !it->is_symlink(ec)) ::chmod(it->path().c_str(), 0700);
  }
}

}  // namespace

std::string FileCache::default_base() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && x[0] == '/')
    return std::string(x) + "/ferry/sync";
  std::string home;
  if (const char* h = std::getenv("HOME"); h && *h) home = h;
  if (home.empty())
    if (const passwd* pw = ::getpwuid(::geteuid())) home = pw->pw_dir;
  return home + "/.cache/ferry/sync";
}

namespace {

// Marks `dir` the top of a hierarchy for ext4's allocator (chattr +T): each directory made in
// it (a job's copy) goes to a block group of its own choosing, with its files, rather than next
// to `dir`. On an ext4 without a journal a new inode passes over every inode of its group
// freed in the last minutes, and the copies and files removed before (spares pushed out,
// eviction) are in `dir`'s groups: a 2,000-file copy made there cost several times one made
// in a fresh group. Nothing where the filesystem has no such flag.
void spread_subdirectories(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  int flags = 0;
  if (!fd || ::ioctl(fd.get(), FS_IOC_GETFLAGS, &flags) != 0 || (flags & FS_TOPDIR_FL) != 0) return;
  flags |= FS_TOPDIR_FL;
  ::ioctl(fd.get(), FS_IOC_SETFLAGS, &flags);
}

}  // namespace

Result<FileCache> FileCache::open(const std::string& base) {
  for (const std::string& d : {base, base + "/files", base + "/jobs"})
    if (Status st = make_private_dir(d, "synced files"); !st) return st.error();
  spread_subdirectories(base + "/jobs");
  return FileCache(base);
}

std::string FileCache::part_path(const std::string& hash) const {
  return base_ + "/files/." + hash + ".part-" + std::to_string(::getpid());
}

std::vector<std::string> FileCache::missing(const std::vector<TreeEntry>& entries) const {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const TreeEntry& e : entries) {
    if (e.kind != TreeEntry::Kind::kFile || !seen.insert(e.hash).second) continue;
    const std::string path = file_path(e.hash);
    const std::string stamp = stamp_of(path);
    if (!stamp.empty()) {
      // Unchanged since it was last checked: no need to read it again.
      if (stamped(path, ok_path(e.hash), stamp)) continue;
      auto h = file_sha256(path);
      if (h && *h == e.hash) {
        write_stamp(path, ok_path(e.hash), stamp);
        continue;
      }
      ::unlink(path.c_str());  // damaged or tampered with: asked for again
      ::unlink(ok_path(e.hash).c_str());
    }
    out.push_back(e.hash);
  }
  return out;
}

Status FileCache::receive(const std::string& hash, std::string_view bytes, bool last) {
  if (!is_hash(hash)) return make_error("a synced file named '" + hash + "', not a SHA-256");
  const std::string part = part_path(hash);
  UniqueFd fd(::open(part.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  if (!fd) return make_error(part + ": " + errno_text());
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string why = part + ": " + errno_text();
      ::unlink(part.c_str());
      return make_error(why);
    }
    done += static_cast<size_t>(n);
  }
  fd.reset();
  if (!last) return {};
  auto h = file_sha256(part);
  if (!h || *h != hash) {
    ::unlink(part.c_str());
    return make_error("synced file " + hash.substr(0, 12) +
                      "...: " + (h ? "the bytes received do not match it" : h.error().message));
  }
  // Stamped before it is made read-only (an attribute needs write permission to be set) and
  // given its name (which it keeps its attributes through).
  write_stamp(part, ok_path(hash), stamp_of(part));
  ::chmod(part.c_str(), 0400);
  if (::rename(part.c_str(), file_path(hash).c_str()) != 0) {
    const std::string why = file_path(hash) + ": " + errno_text();
    ::unlink(part.c_str());
    return make_error(why);
  }
  return {};
}

void FileCache::discard(const std::string& hash) const {
  if (is_hash(hash)) ::unlink(part_path(hash).c_str());
}

Result<std::string> FileCache::materialize(const std::vector<TreeEntry>& entries,
                                           const std::string& name,
                                           const StillWorking& still) const {
  auto copy = CopyBuilder::start(*this, entries, name, {});
  if (!copy) return copy.error();
  return copy->finish(still);
}

bool FileCache::adopt(const std::string& hash, const std::string& path,
                      const std::atomic<bool>& stop) const {
  if (!is_hash(hash)) return false;
  const std::string cached = file_path(hash);
  // There and as checked: kept. (One changed since is replaced below.)
  if (const std::string stamp = stamp_of(cached);
      !stamp.empty() && stamped(cached, ok_path(hash), stamp))
    return true;
  // Not through a link, and never waiting on a FIFO a rank put in its place.
  UniqueFd from(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!from) return false;
  auto digest = ContentHash::start();
  if (!digest) return false;
  const std::string part = part_path(hash);
  UniqueFd to(::open(part.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!to) return false;
  auto give_up = [&] {
    to.reset();
    ::unlink(part.c_str());
    return false;
  };
  struct stat st {};
  if (::fstat(from.get(), &st) != 0 || !S_ISREG(st.st_mode)) return give_up();
  std::vector<char> buf(
      std::clamp<size_t>(static_cast<size_t>(st.st_size) + 1, 4096, size_t{1} << 20));
  for (;;) {
    if (stop.load(std::memory_order_relaxed)) return give_up();
    const ssize_t n = ::read(from.get(), buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return give_up();
    if (n == 0) break;
    digest->update(std::string_view(buf.data(), static_cast<size_t>(n)));
    for (ssize_t done = 0; done < n;) {
      const ssize_t w = ::write(to.get(), buf.data() + done, static_cast<size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return give_up();
      done += w;
    }
  }
  to.reset();
  if (digest->hex() != hash) return give_up();  // its job wrote into it meanwhile
  write_stamp(part, ok_path(hash), stamp_of(part));
  ::chmod(part.c_str(), 0400);
  if (::rename(part.c_str(), cached.c_str()) != 0) return give_up();
  return true;
}

void FileCache::remove_copy(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) return;
  open_up(path);
  fs::remove_all(path, ec);
}

CacheUsage FileCache::usage() const {
  CacheUsage u;
  std::error_code ec;
  for (const auto& f : fs::directory_iterator(base_ + "/files", ec)) {
    if (!is_hash(f.path().filename().string())) continue;
    u.bytes += f.file_size(ec);
    ++u.files;
  }
  for (const auto& j : fs::directory_iterator(base_ + "/jobs", ec)) {
    (void)j;
    ++u.copies;
  }
  for (const auto& j : fs::directory_iterator(base_ + "/spares", ec))
    u.spares += j.path().filename().string().ends_with(".stamps");
  return u;
}

uint64_t FileCache::evict(int64_t max_age_s, uint64_t max_bytes) const {
  struct Cached {
    std::string path;
    uint64_t size;
    time_t used;
  };
  std::vector<Cached> files;
  uint64_t total = 0, removed = 0;
  const time_t now = std::time(nullptr);
  std::error_code ec;
  for (const auto& f : fs::directory_iterator(base_ + "/files", ec)) {
    struct stat st {};
    if (::lstat(f.path().c_str(), &st) != 0) continue;
    const std::string name = f.path().filename().string();
    // A part left by a ferryd that died while receiving.
    if (name.starts_with(".") && name.find(".part-") != std::string::npos) {
      const pid_t owner = std::atoi(name.substr(name.rfind('-') + 1).c_str());
      if (owner > 0 && ::kill(owner, 0) != 0 && errno == ESRCH) {
        removed += static_cast<uint64_t>(st.st_size);
        ::unlink(f.path().c_str());
      }
      continue;
    }
    // A stamp whose file is gone.
    if (name.starts_with(".") && name.ends_with(".ok")) {
      if (!is_hash(name.substr(1, name.size() - 4)) ||
          ::access(file_path(name.substr(1, name.size() - 4)).c_str(), F_OK) != 0)
        ::unlink(f.path().c_str());
      continue;
    }
    if (!is_hash(name)) continue;
    files.push_back({f.path().string(), static_cast<uint64_t>(st.st_size), st.st_atime});
    total += static_cast<uint64_t>(st.st_size);
  }
  std::sort(files.begin(), files.end(),
            [](const Cached& a, const Cached& b) { return a.used < b.used; });
  for (const Cached& c : files) {
    const bool old = max_age_s > 0 && now - c.used > max_age_s;
    const bool over = max_bytes > 0 && total > max_bytes;
    if (!old && !over) continue;
    if (::unlink(c.path.c_str()) == 0) {
      total -= c.size;
      removed += c.size;
      const std::string name = fs::path(c.path).filename().string();
      ::unlink(ok_path(name).c_str());
    }
  }
  // Copies of ferryds that are gone: NAME starts with their pid.
  for (const auto& j : fs::directory_iterator(base_ + "/jobs", ec)) {
    const std::string name = j.path().filename().string();
    const pid_t owner = std::atoi(name.c_str());
    if (owner > 0 && ::kill(owner, 0) != 0 && errno == ESRCH) remove_copy(j.path().string());
  }
  evict_spares(max_age_s, false);
  return removed;
}

uint64_t FileCache::evict_hourly(int64_t max_age_s, uint64_t max_bytes) const {
  const std::string mark = base_ + "/.evicted";
  struct stat st {};
  if (::stat(mark.c_str(), &st) == 0 && std::time(nullptr) - st.st_mtime < 3600) return 0;
  UniqueFd fd(::open(mark.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
  ::utimensat(AT_FDCWD, mark.c_str(), nullptr, 0);
  return evict(max_age_s, max_bytes);
}

CacheUsage FileCache::clear() const {
  CacheUsage removed;
  std::error_code ec;
  for (const auto& f : fs::directory_iterator(base_ + "/files", ec)) {
    const std::string name = f.path().filename().string();
    if (!is_hash(name)) continue;
    const uint64_t size = f.file_size(ec);
    if (::unlink(f.path().c_str()) != 0) continue;
    ::unlink(ok_path(name).c_str());
    removed.bytes += size;
    ++removed.files;
  }
  const CacheUsage before = usage();
  evict(0, 0);  // stamps left, parts and copies of ferryds that are gone
  evict_spares(0, true);
  removed.copies = before.copies - usage().copies;
  removed.spares = before.spares;
  return removed;
}

std::string fresh_copy_name() {
  auto b = random_bytes(4);
  return std::to_string(::getpid()) + "-" + (b ? hex_text(*b) : std::string("0"));
}

}  // namespace ferry
