// A synced tree read from disk: the walk, the ignore patterns, the limits, the hashes.
#include "ferry/sync/tree.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string_view>
#include <utility>

#include "ferry/common/posix_handles.hpp"
#include "ferry/common/read_text_file.hpp"
#include "ferry/transport/content_hash.hpp"

namespace ferry {

namespace {

std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> out;
  while (!path.empty()) {
    const size_t slash = std::min(path.find('/'), path.size());
    if (slash > 0) out.emplace_back(path.substr(0, slash));
    path.remove_prefix(std::min(slash + 1, path.size()));
  }
  return out;
}

// Pattern segments against path segments; "**" takes any number of segments.
bool match_segments(const std::vector<std::string>& pat, size_t i,
                    const std::vector<std::string>& path, size_t j) {
  if (i == pat.size()) return j == path.size();
  if (pat[i] == "**") {
    // A trailing "**" is what is inside: one segment at least ("data/**" leaves "data" in).
    const size_t from = i + 1 == pat.size() ? j + 1 : j;
    for (size_t k = from; k <= path.size(); ++k)
      if (match_segments(pat, i + 1, path, k)) return true;
    return false;
  }
  if (j == path.size()) return false;
  if (::fnmatch(pat[i].c_str(), path[j].c_str(), 0) != 0) return false;
  return match_segments(pat, i + 1, path, j + 1);
}

// Whether the link at `rel` (inside the tree) with `target` resolves, lexically, inside it.
bool link_inside(const std::string& rel, const std::string& target) {
  if (target.empty() || target.front() == '/') return false;
  const std::filesystem::path parent = std::filesystem::path(rel).parent_path();
  const std::string norm = (parent / target).lexically_normal().generic_string();
  return norm != ".." && !norm.starts_with("../") && norm != ".";
}

const char* special_kind(mode_t m) {
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  return nullptr;
}

class Walker {
 public:
  Walker(std::string root, const IgnoreRules& ignore, const SyncRules& rules, SyncTree& tree,
         HashIndex& index)
      : root_(std::move(root)), ignore_(ignore), rules_(rules), tree_(tree), index_(index) {}

  // Every entry under `rel` ("" the top), sorted by name; a file with the hash the index
  // remembers for it, or none yet (then in `unread`).
  // Each name is stat-ed (and a link read) relative to its directory's open descriptor, not
  // by a path from the top; the directory is closed before its subdirectories are entered.
  Status walk(const std::string& rel) {
    if (rules_.stop && rules_.stop->load()) return make_error("--sync: reading stopped");
    const std::string abs = rel.empty() ? root_ : root_ + "/" + rel;
    std::vector<Named> names;
    {
      // Read with getdents64 into the walk's one buffer: opendir() would fstat each directory
      // and allocate a buffer of its own for it.
      const UniqueFd d(::open(abs.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (!d) return make_error(abs + ": " + std::strerror(errno));
      const int fd = d.get();
      if (!dents_) dents_ = std::make_unique<uint64_t[]>(kDentsWords);
      char* const buf = reinterpret_cast<char*>(dents_.get());
      for (;;) {
        const ssize_t got = ::getdents64(fd, buf, kDentsWords * sizeof(uint64_t));
        if (got < 0) return make_error(abs + ": " + std::strerror(errno));
        if (got == 0) break;
        for (ssize_t at = 0; at < got;) {
          const auto* e = reinterpret_cast<const dirent64*>(buf + at);
          at += e->d_reclen;
          const std::string_view n = e->d_name;
          if (n != "." && n != "..") names.push_back({std::string(n), {}, {}});
        }
      }
      std::sort(names.begin(), names.end(),
                [](const Named& a, const Named& b) { return a.name < b.name; });
      for (Named& n : names) {
        if (::fstatat(fd, n.name.c_str(), &n.st, AT_SYMLINK_NOFOLLOW) != 0)
          return make_error(abs + "/" + n.name + ": " + std::strerror(errno));
        if (!S_ISLNK(n.st.st_mode)) continue;
        n.target.assign(static_cast<size_t>(n.st.st_size) + 1, '\0');
        const ssize_t got = ::readlinkat(fd, n.name.c_str(), n.target.data(), n.target.size());
        if (got < 0) return make_error(abs + "/" + n.name + ": " + std::strerror(errno));
        n.target.resize(static_cast<size_t>(got));
      }
    }
    for (Named& n : names)
      if (Status st = visit(rel.empty() ? n.name : rel + "/" + n.name, n); !st) return st;
    return {};
  }

 private:
  // A directory's entry as its walk found it.
  struct Named {
    std::string name;
    struct stat st;
    std::string target;  // a symlink's
  };

  Status visit(const std::string& rel, Named& n) {
    const struct stat& st = n.st;
    const bool dir = S_ISDIR(st.st_mode);
    if (ignore_.excluded(rel, dir)) return {};
    TreeEntry e;
    e.path = rel;
    e.mode = st.st_mode & 07777;
    if (dir) {
      e.kind = TreeEntry::Kind::kDirectory;
      add(std::move(e));
      return walk(rel);
    }
    if (S_ISLNK(st.st_mode)) {
      if (!link_inside(rel, n.target))
        return make_error(root_ + "/" + rel + ": a symlink to " + n.target +
                          ", outside the tree (only links inside it are synced; leave it out "
                          "with --sync-exclude)");
      e.kind = TreeEntry::Kind::kSymlink;
      e.target = std::move(n.target);
      add(std::move(e));
      return {};
    }
    if (const char* what = special_kind(st.st_mode)) {
      tree_.skipped.push_back("skipped " + root_ + "/" + rel + ": " + what + " is not synced");
      return {};
    }
    e.kind = TreeEntry::Kind::kFile;
    e.size = static_cast<uint64_t>(st.st_size);
    e.hash = index_.remembered(rel, st);
    tree_.bytes += e.size;
    ++tree_.files;
    if (e.hash.empty()) unread.emplace_back(tree_.entries().size(), st);
    add(std::move(e));
    return {};
  }

 public:
  /// The files to read for their hashes: their index in the tree's entries, what lstat said.
  std::vector<std::pair<size_t, struct stat>> unread;

 private:
  void add(TreeEntry e) { tree_.entries().push_back(std::move(e)); }

  static constexpr size_t kDentsWords = 4096;  // 32 KiB, as glibc's readdir reads

  std::string root_;
  const IgnoreRules& ignore_;
  const SyncRules& rules_;
  SyncTree& tree_;
  HashIndex& index_;
  std::unique_ptr<uint64_t[]> dents_;  // getdents64's buffer, 8-byte aligned as a dirent64
};

// A link that leads, through links of the tree, back to itself: refused, as the host would
// find it dangling. Followed on the links' text, as link_inside() judges them.
Status check_link_loops(const std::string& root, const std::vector<TreeEntry>& entries) {
  std::map<std::string, std::string> links;
  for (const TreeEntry& e : entries)
    if (e.kind == TreeEntry::Kind::kSymlink) links[e.path] = e.target;
  for (const auto& [path, target] : links) {
    std::string cur = path, chain = path;
    std::set<std::string> seen{path};
    for (auto it = links.find(cur); it != links.end(); it = links.find(cur)) {
      cur = (std::filesystem::path(cur).parent_path() / it->second)
                .lexically_normal()
                .generic_string();
      chain += " -> " + cur;
      if (!seen.insert(cur).second)
        return make_error(root + "/" + path + ": a symlink loop (" + chain +
                          "); leave it out with --sync-exclude");
    }
  }
  return {};
}

}  // namespace

std::string bytes_text(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  auto v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

void IgnoreRules::add(const std::string& pattern) {
  std::string p = pattern;
  while (!p.empty() && (p.back() == ' ' || p.back() == '\t' || p.back() == '\r')) p.pop_back();
  if (p.empty() || p.front() == '#') return;
  Rule r;
  if (p.front() == '!') {
    r.negate = true;
    p.erase(0, 1);
  } else if (p.starts_with("\\!") || p.starts_with("\\#")) {
    p.erase(0, 1);
  }
  if (!p.empty() && p.back() == '/') {
    r.directory_only = true;
    p.pop_back();
  }
  r.anchored = p.find('/') != std::string::npos;
  while (p.starts_with("/")) p.erase(0, 1);
  if (p.empty()) return;
  r.pattern = p;
  if (r.anchored) r.segments = split_path(p);
  rules_.push_back(std::move(r));
}

void IgnoreRules::add_file_text(const std::string& text) {
  std::stringstream ss(text);
  for (std::string line; std::getline(ss, line);) add(line);
}

bool IgnoreRules::excluded(const std::string& path, bool directory) const {
  if (rules_.empty()) return false;
  // The last name is the path's own end, NUL-terminated as fnmatch wants it.
  const size_t slash = path.rfind('/');
  const char* name = path.c_str() + (slash == std::string::npos ? 0 : slash + 1);
  if (*name == '\0') return false;
  std::vector<std::string> segs;  // split only for an anchored rule
  bool out = false;
  for (const Rule& r : rules_) {
    if (r.directory_only && !directory) continue;
    bool hit = false;
    if (r.anchored) {
      if (segs.empty()) segs = split_path(path);
      hit = match_segments(r.segments, 0, segs, 0);
    } else {
      hit = ::fnmatch(r.pattern.c_str(), name, 0) == 0;
    }
    if (hit) out = !r.negate;
  }
  return out;
}

Result<SyncSpec> parse_sync_spec(const std::string& text) {
  SyncSpec s;
  const size_t colon = text.find(':');
  s.source = text.substr(0, colon);
  if (colon != std::string::npos) s.dest = text.substr(colon + 1);
  if (s.source.empty()) return make_error("--sync " + text + ": no directory before ':'");
  if (s.dest.starts_with("/"))
    return make_error("--sync " + text + ": DEST must be relative (inside the job's own copy)");
  std::string dest;
  for (const std::string& seg : split_path(s.dest)) {
    if (seg == "..") return make_error("--sync " + text + ": DEST may not hold '..'");
    if (seg != ".") dest += (dest.empty() ? "" : "/") + seg;
  }
  s.dest = dest;
  return s;
}

Status check_tree_source(const SyncSpec& spec, struct stat* top) {
  struct stat st {};
  if (::stat(spec.source.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return make_error("--sync " + spec.source + ": not a directory");
  if (top) *top = st;
  return {};
}

Result<SyncTree> scan_tree(const SyncSpec& spec, const SyncRules& rules) {
  struct stat st {};
  if (Status ok = check_tree_source(spec, &st); !ok) return ok.error();
  std::string root = spec.source;
  while (root.size() > 1 && root.ends_with("/")) root.pop_back();
  SyncTree tree;
  std::vector<TreeEntry>& entries = tree.entries();
  IgnoreRules ignore;
  for (const char* name : {".ferryignore", ".gitignore"}) {
    const std::string f = root + "/" + name;
    if (::access(f.c_str(), R_OK) == 0) {
      auto text = read_text_file(f, size_t{1} << 20, "ignore file");
      if (!text) return make_error("--sync: " + text.error().message);
      ignore.add_file_text(*text);
      tree.ignore_file = f;
      break;
    }
  }
  for (const std::string& p : rules.excludes) ignore.add(p);
  // DEST's own directories first: the tree's top goes there.
  std::string prefix;
  for (const std::string& seg : split_path(spec.dest)) {
    prefix += (prefix.empty() ? "" : "/") + seg;
    TreeEntry d;
    d.path = prefix;
    d.kind = TreeEntry::Kind::kDirectory;
    d.mode = prefix == spec.dest ? (st.st_mode & 07777) : 0755;
    entries.push_back(d);
  }
  const size_t first = entries.size();
  // Opened before the walk, which takes each unchanged file's hash from it as it goes: the
  // stat of a walk is all an unchanged tree costs, and no second pass over the entries.
  HashIndex index = HashIndex::open(rules.hash_index_dir, root, rules.hash_racy_ns);
  entries.reserve(first + index.size() + index.size() / 4 + 64);  // its directories too
  Walker w(root, ignore, rules, tree, index);
  if (Status s = w.walk(""); !s) return s.error();
  if (Status s = check_link_loops(root, entries); !s) return s.error();
  if (rules.max_bytes > 0 && tree.bytes > rules.max_bytes)
    return make_error("--sync " + spec.source + ": " + bytes_text(tree.bytes) + " in " +
                      std::to_string(tree.files) + " files, over --sync-max " +
                      bytes_text(rules.max_bytes) +
                      " (leave some out with --sync-exclude or a .ferryignore, or raise it)");
  for (const auto& [i, st] : w.unread) {
    if (rules.stop && rules.stop->load()) return make_error("--sync: reading stopped");
    TreeEntry& e = entries[i];
    auto h = index.read(e.path, root + "/" + e.path, st);
    if (!h) return make_error("--sync: " + h.error().message);
    e.hash = *h;
  }
  for (size_t i = first; i < entries.size(); ++i) {
    TreeEntry& e = entries[i];
    if (e.kind == TreeEntry::Kind::kFile) e.source = root + "/" + e.path;
    if (!prefix.empty()) e.path = prefix + "/" + e.path;
  }
  index.save();
  tree.files_read = index.files_read();
  return tree;
}

Status check_single_files(const std::vector<std::string>& files, const std::string& option) {
  std::set<std::string> names;
  for (const std::string& f : files) {
    struct stat st {};
    if (::stat(f.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      return make_error(option + " " + f + ": not a file");
    const std::string name = std::filesystem::path(f).filename().string();
    if (!names.insert(name).second) return make_error(option + ": two files named " + name);
  }
  return {};
}

Result<SyncTree> scan_files(const std::vector<std::string>& files, const std::string& option) {
  if (Status ok = check_single_files(files, option); !ok) return ok.error();
  SyncTree tree;
  for (const std::string& f : files) {
    struct stat st {};
    if (::stat(f.c_str(), &st) != 0)
      return make_error(option + " " + f + ": " + std::strerror(errno));
    TreeEntry e;
    e.path = std::filesystem::path(f).filename().string();
    e.kind = TreeEntry::Kind::kFile;
    e.mode = st.st_mode & 07777;
    e.size = static_cast<uint64_t>(st.st_size);
    e.source = f;
    auto h = file_sha256(f);
    if (!h) return make_error(option + ": " + h.error().message);
    e.hash = *h;
    ++tree.files_read;
    tree.bytes += e.size;
    ++tree.files;
    tree.entries().push_back(std::move(e));
  }
  std::sort(tree.entries().begin(), tree.entries().end(),
            [](const TreeEntry& a, const TreeEntry& b) { return a.path < b.path; });
  return tree;
}

Result<std::string> tree_digest(const std::vector<TreeEntry>& entries) {
  auto h = ContentHash::start();
  if (!h) return h.error();
  // Each entry's "KIND MODE SIZE HASH LEN:PATH LEN:TARGET", hashed in pieces of about 64 KiB:
  // a call of the hash per entry's part cost more than the hashing itself.
  std::string text;
  text.reserve(size_t{1} << 16);
  std::array<char, 24> buf{};
  const auto number = [&text, &buf](uint64_t v) {
    text.append(buf.data(), std::to_chars(buf.data(), buf.data() + buf.size(), v).ptr);
  };
  for (const TreeEntry& e : entries) {
    number(static_cast<uint64_t>(e.kind));
    text += ' ';
    number(e.mode);
    text += ' ';
    number(e.size);
    text += ' ';
    text += e.hash;
    text += ' ';
    number(e.path.size());
    text += ':';
    text += e.path;
    text += ' ';
    number(e.target.size());
    text += ':';
    text += e.target;
    if (text.size() >= (size_t{1} << 16) - 512) {
      h->update(text);
      text.clear();
    }
  }
  h->update(text);
  return h->hex();
}

const std::vector<TreeEntry>& SyncTree::entries() const {
  if (decode_) {
    entries_ = decode_();
    decode_ = nullptr;
  }
  return entries_;
}

std::vector<TreeEntry>& SyncTree::entries() {
  std::as_const(*this).entries();
  return entries_;
}

void SyncTree::defer_entries(std::function<std::vector<TreeEntry>()> decode) {
  entries_.clear();
  decode_ = std::move(decode);
}

SyncTree merge_trees(std::vector<SyncTree> trees) {
  if (trees.size() == 1) return std::move(trees.front());
  std::map<std::string, TreeEntry> by_path;
  SyncTree out;
  for (SyncTree& t : trees) {
    for (TreeEntry& e : t.entries()) by_path[e.path] = std::move(e);
    for (std::string& s : t.skipped) out.skipped.push_back(std::move(s));
    out.files_read += t.files_read;
  }
  for (auto& [path, e] : by_path) {
    // Under a path a later tree made a file or link: gone with the directory it was in.
    const auto parent = std::filesystem::path(path).parent_path().generic_string();
    if (!parent.empty()) {
      auto it = by_path.find(parent);
      if (it == by_path.end() || it->second.kind != TreeEntry::Kind::kDirectory) continue;
    }
    if (e.kind == TreeEntry::Kind::kFile) {
      out.bytes += e.size;
      ++out.files;
    }
    out.entries().push_back(std::move(e));
  }
  return out;
}

}  // namespace ferry
