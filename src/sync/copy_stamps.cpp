// The stamps of a job's copy: what each entry looked like when the copy was made (change
// time, inode, size), written beside a spare and compared when the spare is taken.
#include "copy_stamps.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <set>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "ferry/common/mapped_file.hpp"
#include "ferry/common/posix_handles.hpp"
#include "ferry/sync/file_cache.hpp"

namespace ferry {

namespace sync_detail {

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

// The lines of a stamps file; none when it cannot be read.
FileCache::CopyStamps read_stamps(const std::string& file) {
  // A stamps file holds a line per entry of a tree; one past any --sync-max tree is damaged.
  auto text = MappedFile::open(file, size_t{1} << 30, "stamps file");
  if (!text) return {};
  return FileCache::CopyStamps::from_file(std::move(*text));
}

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

// A stamps file's line for `e` as `st` finds it: its stamp, then the entry: its path (with its
// length: a name may hold spaces), kind, mode, size, hash and target.
void stamp_line(std::string& out, const struct stat& st, const TreeEntry& e) {
  std::array<char, 64> buf{};
  out.assign(stamp_chars(st, buf));
  const auto number = [&out, &buf](uint64_t v) {
    out.append(buf.data(), std::to_chars(buf.data(), buf.data() + buf.size(), v).ptr);
  };
  out += ' ';
  number(e.path.size());
  out += ':';
  out += e.path;
  out += ' ';
  number(static_cast<uint64_t>(e.kind));
  out += ' ';
  number(e.mode);
  out += ' ';
  number(e.size);
  out += ' ';
  out += e.hash;
  out += ' ';
  out += e.target;
}

// The path in a line of a stamps file, "STAMP LEN:PATH REST" ("" when it is not one).
std::string_view stamp_line_path(std::string_view line) {
  const size_t sp = line.find(' ');
  if (sp == std::string_view::npos) return {};
  size_t len = 0;
  const char* const end = line.data() + line.size();
  const auto [at, ec] = std::from_chars(line.data() + sp + 1, end, len);
  if (ec != std::errc() || len == 0 || at == end || *at != ':' ||
      len > static_cast<size_t>(end - at - 1))
    return {};
  return {at + 1, len};
}

std::string parent_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

bool copy_untouched(const std::string& at, const FileCache::CopyStamps& stamps) {
  if (stamps.empty()) return false;
  const UniqueFd top(::open(at.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!top) return false;
  CopyStatter statter(top.get());
  std::set<std::string_view> top_names;
  std::array<char, 64> buf{};
  for (size_t i = 0; i < stamps.size(); ++i) {
    const std::string_view line = stamps[i];
    const std::string_view path = stamp_line_path(line);
    struct stat st {};
    if (path.empty() || !statter.stat(path, st) ||
        line.substr(0, line.find(' ')) != stamp_chars(st, buf))
      return false;
    if (path.find('/') == std::string_view::npos) top_names.insert(path);
  }
  const DirPtr d = open_dir_at(top.get());
  if (!d) return false;
  bool same = true;
  while (const dirent* ent = ::readdir(d.get())) {
    const std::string_view n = ent->d_name;
    if (n != "." && n != ".." && !top_names.contains(n)) same = false;
  }
  return same;
}

int stamp_line_kind(std::string_view line) {
  const std::string_view path = stamp_line_path(line);
  if (path.empty()) return -1;
  const std::string_view rest =
      line.substr(static_cast<size_t>(path.data() + path.size() - line.data()));
  if (rest.size() < 3 || rest[0] != ' ' || rest[2] != ' ' || rest[1] < '0' || rest[1] > '2')
    return -1;
  return rest[1] - '0';
}

bool CopyStatter::stat(std::string_view path, struct stat& st) {
  path_.assign(path);  // NUL-terminated for the call
  return ::fstatat(top_, path_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

}  // namespace sync_detail

using namespace sync_detail;  // NOLINT(google-build-using-namespace): this part's own helpers

// Where each line of `text` ends (its newline), in one pass.
std::vector<size_t> FileCache::CopyStamps::line_ends(std::string_view text) {
  std::vector<size_t> ends;
  ends.reserve(text.size() / 96 + 16);  // a line is some 100-130 bytes
  for (const char *p = text.data(), *end = p + text.size();
       (p = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)))); ++p)
    ends.push_back(static_cast<size_t>(p - text.data()));
  return ends;
}

FileCache::CopyStamps FileCache::CopyStamps::from_text(std::string text) {
  CopyStamps out;
  if (!text.empty() && text.back() != '\n') text.push_back('\n');
  out.ends_ = line_ends(text);
  out.text_ = std::move(text);
  return out;
}

FileCache::CopyStamps FileCache::CopyStamps::from_file(MappedFile file) {
  const std::string_view text = file.text();
  if (!text.empty() && text.back() != '\n') return from_text(std::string(text));
  CopyStamps out;
  out.ends_ = line_ends(text);
  out.file_ = std::make_shared<const MappedFile>(std::move(file));
  return out;
}

FileCache::CopyStamps FileCache::stamp_copy(const std::string& path,
                                            const std::vector<TreeEntry>& entries) {
  CopyStamps out;
  out.reserve(entries.size(), entries.size() * 128);
  int64_t newest = 0;
  std::string line;
  for (const TreeEntry& e : entries) {
    struct stat st {};
    if (::lstat((path + "/" + e.path).c_str(), &st) != 0) return {};
    newest = std::max(newest, time_ns(st.st_ctim));
    stamp_line(line, st, e);
    out.push_back(line);
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
  std::unordered_map<std::string_view, size_t> kept;
  kept.reserve(spare.stamps.size());
  for (size_t i = 0; i < spare.stamps.size(); ++i)
    kept.emplace(stamp_line_path(spare.stamps[i]), i);
  UniqueFd top(::open(spare.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!top) return {};
  CopyStamps out;
  out.reserve(entries.size(), spare.stamps.text().size() + 1024);
  int64_t newest = 0;
  std::string line;
  for (const TreeEntry& e : entries) {
    auto k = kept.find(e.path);
    if (k != kept.end() && !touched.contains(e.path)) {
      out.push_back(spare.stamps[k->second]);  // as take_spare() found it: untouched since
      continue;
    }
    struct stat st {};
    if (::fstatat(top.get(), e.path.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return {};
    newest = std::max(newest, time_ns(st.st_ctim));
    stamp_line(line, st, e);
    out.push_back(line);
  }
  wait_past(newest);
  return out;
}

}  // namespace ferry
