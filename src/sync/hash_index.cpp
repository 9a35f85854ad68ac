// ferryrun's memory of a synced tree's hashes: one text file per tree, read at the launch,
// written after the scan. A line per file: "HASH SIZE MTIME CTIME INO HASHED PATH" (times in
// nanoseconds; the path last, as it may hold spaces).
#include "ferry/sync/hash_index.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <vector>

#include "ferry/common/private_dir.hpp"
#include "ferry/transport/content_hash.hpp"

namespace ferry {

namespace {

constexpr const char* kHeader = "ferry-hashes 1 ";
constexpr int64_t kKeepS = int64_t{14} * 24 * 3600;
// An index larger than this (some 3 million files) is started afresh.
constexpr size_t kIndexLimit = size_t{512} << 20;

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

// "HASH SIZE MTIME CTIME INO HASHED PATH" into `k`; the path, empty when the line is not one.
std::string_view HashIndex::parse_line(std::string_view line, Known& k) {
  if (line.size() < 66 || line[64] != ' ') return {};
  k.hash = line.substr(0, 64);
  const char* p = line.data() + 64;
  const char* end = line.data() + line.size();
  int64_t v[5];
  for (int64_t& x : v) {
    if (p == end || *p != ' ') return {};
    auto [next, ec] = std::from_chars(p + 1, end, x);
    if (ec != std::errc() || next == p + 1) return {};
    p = next;
  }
  if (end - p < 2 || *p != ' ') return {};
  k.stamp = {static_cast<uint64_t>(v[0]), v[1], v[2], static_cast<uint64_t>(v[3]), v[4]};
  return {p + 1, static_cast<size_t>(end - p - 1)};
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
  auto text = MappedFile::open(index.file_, kIndexLimit, "hash index");
  if (!text) return index;
  index.text_ = std::move(*text);
  std::string_view rest = index.text_.text();
  auto next_line = [&rest]() {
    const size_t nl = std::min(rest.find('\n'), rest.size());
    const std::string_view line = rest.substr(0, nl);
    rest.remove_prefix(std::min(nl + 1, rest.size()));
    return line;
  };
  if (next_line() != kHeader + index.root_) return index;
  index.before_.reserve(static_cast<size_t>(std::count(rest.begin(), rest.end(), '\n')));
  while (!rest.empty()) {
    Known k;
    if (auto path = parse_line(next_line(), k); !path.empty()) index.before_.emplace_back(path, k);
  }
  // save() writes the files sorted; an index written otherwise is sorted here (stably: of two
  // lines of one path, the first is found, as before).
  auto by_path = [](const auto& a, const auto& b) { return a.first < b.first; };
  if (!std::is_sorted(index.before_.begin(), index.before_.end(), by_path))
    std::stable_sort(index.before_.begin(), index.before_.end(), by_path);
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
  if (std::string h = remembered(rel, st); !h.empty()) return h;
  return read(rel, full, st);
}

std::string HashIndex::remembered(std::string_view rel, const struct stat& st) {
  auto it = std::lower_bound(before_.begin(), before_.end(), rel,
                             [](const auto& e, std::string_view k) { return e.first < k; });
  if (it == before_.end() || it->first != rel || !trusted(it->second, stamp_of(st))) return {};
  ++remembered_;
  it->second.kept = true;  // written again by save()
  return std::string(it->second.hash);
}

Result<std::string> HashIndex::read(const std::string& rel, const std::string& full,
                                    const struct stat& st) {
  Stamp s = stamp_of(st);
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
  // Unchanged: every file remembered, none read, none gone.
  if (file_.empty() || (read_ == 0 && now_.empty() && remembered_ == before_.size())) return;
  const std::string dir = file_.substr(0, file_.rfind('/'));
  forget_old(dir);
  // The files of the tree as it is now: those remembered, and those read (which replace theirs).
  struct Line {
    std::string_view path;
    const Stamp* stamp;
    std::string_view hash;
  };
  std::vector<Line> lines;
  lines.reserve(remembered_ + now_.size());
  for (const auto& [path, k] : before_)
    if (k.kept && !now_.contains(path)) lines.push_back({path, &k.stamp, k.hash});
  for (const auto& [path, r] : now_) lines.push_back({path, &r.stamp, r.hash});
  std::sort(lines.begin(), lines.end(),
            [](const Line& a, const Line& b) { return a.path < b.path; });
  const std::string tmp = file_ + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << kHeader << root_ << '\n';
    for (const Line& l : lines)
      out << l.hash << ' ' << l.stamp->size << ' ' << l.stamp->mtime_ns << ' ' << l.stamp->ctime_ns
          << ' ' << l.stamp->ino << ' ' << l.stamp->hashed_ns << ' ' << l.path << '\n';
    if (!out.flush()) {
      ::unlink(tmp.c_str());
      return;
    }
  }
  if (::rename(tmp.c_str(), file_.c_str()) != 0) ::unlink(tmp.c_str());
}

}  // namespace ferry
