// ferryrun's memory of a synced tree's hashes: one text file per tree, read at the launch,
// written after the scan. A line per file: "HASH SIZE MTIME CTIME INO HASHED PATH" (times in
// nanoseconds; the path last, as it may hold spaces).
#include "ferry/sync/hash_index.hpp"

#include <dirent.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>

#include "ferry/common/private_dir.hpp"
#include "ferry/transport/content_hash.hpp"

namespace ferry {

namespace {

constexpr const char* kHeader = "ferry-hashes 1 ";
constexpr int64_t kKeepS = int64_t{14} * 24 * 3600;

int64_t ns_of(const struct timespec& t) { return t.tv_sec * 1'000'000'000LL + t.tv_nsec; }

int64_t now_ns() {
  struct timespec t {};
  ::clock_gettime(CLOCK_REALTIME, &t);
  return ns_of(t);
}

// Indexes of other trees not written for kKeepS.
void forget_old(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  const time_t cutoff = ::time(nullptr) - kKeepS;
  while (const dirent* ent = ::readdir(d)) {
    const std::string name = ent->d_name;
    if (name == "." || name == "..") continue;
    const std::string path = dir + "/" + name;
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_mtime < cutoff)
      ::unlink(path.c_str());
  }
  ::closedir(d);
}

}  // namespace

// "HASH SIZE MTIME CTIME INO HASHED PATH" into `k`; the path, "" when the line is not one.
std::string HashIndex::parse_line(const std::string& line, Known& k) {
  const char* p = line.c_str();
  const char* space = std::strchr(p, ' ');
  if (!space || space - p != 64) return "";
  k.hash.assign(p, 64);
  p = space;
  int64_t v[5];
  for (int64_t& x : v) {
    char* end = nullptr;
    if (*p != ' ') return "";
    errno = 0;
    x = std::strtoll(p + 1, &end, 10);
    if (errno != 0 || end == p + 1) return "";
    p = end;
  }
  if (*p != ' ' || p[1] == '\0') return "";
  k.stamp = {static_cast<uint64_t>(v[0]), v[1], v[2], static_cast<uint64_t>(v[3]), v[4]};
  return std::string(p + 1);
}

HashIndex HashIndex::open(const std::string& dir, const std::string& root, int64_t racy_ns) {
  HashIndex index;
  index.racy_ns_ = racy_ns;
  char* real = ::realpath(root.c_str(), nullptr);
  index.root_ = real ? real : root;
  std::free(real);
  if (dir.empty() || !make_private_dir(dir, "the hashes of synced trees")) return index;
  auto name = bytes_sha256(index.root_);
  if (!name) return index;
  index.file_ = dir + "/" + name->substr(0, 32);
  std::ifstream in(index.file_);
  std::string line;
  if (!std::getline(in, line) || line != kHeader + index.root_) return index;
  while (std::getline(in, line)) {
    Known k;
    if (auto path = parse_line(line, k); !path.empty()) index.before_.emplace(std::move(path), k);
  }
  return index;
}

HashIndex::Stamp HashIndex::stamp_of(const struct stat& st) {
  Stamp s;
  s.size = static_cast<uint64_t>(st.st_size);
  s.mtime_ns = ns_of(st.st_mtim);
  s.ctime_ns = ns_of(st.st_ctim);
  s.ino = st.st_ino;
  return s;
}

bool HashIndex::trusted(const Known& k, const Stamp& now) const {
  Stamp then = k.stamp;
  then.hashed_ns = 0;
  return then == now && k.stamp.hashed_ns - k.stamp.ctime_ns > racy_ns_;
}

Result<std::string> HashIndex::hash(const std::string& rel, const std::string& full) {
  struct stat st {};
  if (::stat(full.c_str(), &st) != 0) return make_error(full + ": " + std::strerror(errno));
  return hash(rel, full, st);
}

Result<std::string> HashIndex::hash(const std::string& rel, const std::string& full,
                                    const struct stat& st) {
  Stamp s = stamp_of(st);
  if (auto it = before_.find(rel); it != before_.end() && trusted(it->second, s)) {
    ++remembered_;
    now_[rel] = it->second;
    return it->second.hash;
  }
  s.hashed_ns = now_ns();
  auto h = file_sha256(full);
  if (!h) return h.error();
  ++read_;
  // A file that changed while it was read: its stamp is not the hash's.
  struct stat after {};
  if (::stat(full.c_str(), &after) == 0 &&
      stamp_of(after) == Stamp{s.size, s.mtime_ns, s.ctime_ns, s.ino, 0})
    if (rel.find('\n') == std::string::npos) now_[rel] = {s, *h};
  return h;
}

void HashIndex::save() const {
  if (file_.empty() || (read_ == 0 && now_.size() == before_.size())) return;
  const std::string dir = file_.substr(0, file_.rfind('/'));
  forget_old(dir);
  const std::string tmp = file_ + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << kHeader << root_ << '\n';
    for (const auto& [path, k] : now_)
      out << k.hash << ' ' << k.stamp.size << ' ' << k.stamp.mtime_ns << ' ' << k.stamp.ctime_ns
          << ' ' << k.stamp.ino << ' ' << k.stamp.hashed_ns << ' ' << path << '\n';
    if (!out.flush()) {
      ::unlink(tmp.c_str());
      return;
    }
  }
  if (::rename(tmp.c_str(), file_.c_str()) != 0) ::unlink(tmp.c_str());
}

}  // namespace ferry
