// A warm pool's watch over the trees its jobs sync, ferryrun's question to it, and the snapshot
// of a tree's reading that an unchanged tree is taken from.
#include "ferry/sync/tree_watch.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>

#include "ferry/common/mapped_file.hpp"
#include "ferry/common/random_bytes.hpp"
#include "inotify_watch.hpp"

namespace ferry {

namespace {

// File systems whose every change inotify sees: local disks' and memory's. On NFS, CIFS, FUSE
// and cluster file systems a change made on another machine makes no event here.
bool watchable(int fd) {
  struct statfs s {};
  if (::fstatfs(fd, &s) != 0) return false;
  switch (static_cast<unsigned long>(s.f_type)) {
    case 0xEF53UL:      // ext2, ext3, ext4
    case 0x58465342UL:  // XFS
    case 0x9123683EUL:  // Btrfs
    case 0x01021994UL:  // tmpfs
    case 0xF2F52010UL:  // F2FS
    case 0x794C7630UL:  // overlayfs (a container's)
      return true;
    default:
      return false;
  }
}

constexpr int kAnswerMs = 500;

void put_number(std::string& out, uint64_t v) {
  do {
    uint8_t b = v & 0x7F;
    v >>= 7;
    if (v != 0) b |= 0x80;
    out += static_cast<char>(b);
  } while (v != 0);
}

void put_text(std::string& out, std::string_view s) {
  put_number(out, s.size());
  out += s;
}

struct Reader {
  std::string_view in;
  bool ok = true;
  uint64_t number() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (in.empty()) break;
      const auto b = static_cast<uint8_t>(in.front());
      in.remove_prefix(1);
      v |= static_cast<uint64_t>(b & 0x7F) << shift;
      if ((b & 0x80) == 0) return v;
    }
    ok = false;
    return 0;
  }
  std::string text() {
    const uint64_t n = number();
    if (!ok || n > in.size()) {
      ok = false;
      return {};
    }
    std::string s(in.substr(0, n));
    in.remove_prefix(n);
    return s;
  }
};

constexpr std::string_view kSnapshotMagic = "ferry tree snapshot 1\n";

// What a snapshot was read with: the tree's real path, DIR as given and the directory it was
// given in (the files' paths to read them by are DIR's), DEST and the --sync-exclude patterns.
std::string snapshot_key(const std::string& root, const SyncSpec& spec, const SyncRules& rules) {
  std::string key;
  put_text(key, root);
  put_text(key, spec.source);
  char cwd[PATH_MAX];
  put_text(key, ::getcwd(cwd, sizeof cwd) != nullptr ? cwd : "");
  put_text(key, spec.dest);
  put_number(key, rules.excludes.size());
  for (const std::string& e : rules.excludes) put_text(key, e);
  return key;
}

std::string snapshot_file(const SyncRules& rules, const std::string& key) {
  const uint64_t h = sync_detail::fnv1a(key);
  char name[40];
  std::snprintf(name, sizeof name, "/tree-%016llx.snapshot", static_cast<unsigned long long>(h));
  return rules.hash_index_dir + name;
}

}  // namespace

TreeWatch::TreeWatch() {
  auto r = random_bytes(8);
  instance_ = r ? hex_text(*r) : std::to_string(::getpid());
}

// Each tree's events on its own inotify descriptor: two trees that share directories (one
// inside the other) each see a change in them.
void TreeWatch::read_events() {
  for (auto& entry : trees_) {
    Tree& t = entry.second;
    if (!t.notify) continue;
    sync_detail::read_inotify_events(t.notify.get(), [&t](const inotify_event& ev) {
      // Not a watch of its own any more (dropped with a directory that left the tree): not a
      // change. Every other event is.
      if ((ev.mask & IN_Q_OVERFLOW) != 0 || std::binary_search(t.wds.begin(), t.wds.end(), ev.wd))
        t.changed = true;
    });
  }
}

// Every directory and regular file of the tree watched (those watched already keep their
// watch): false when the tree may not be watched (a file system inotify does not see all of,
// too many directories or files, no watch to be had). A file's own watch sees a write to it
// by any of its names (a hard link from outside the tree), which its directory's does not.
bool TreeWatch::watch(const std::string& root, Tree& t) {
  if (!t.notify) t.notify.reset(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (!t.notify) return false;
  const int notify = t.notify.get();
  std::vector<std::string> todo{root};
  std::vector<int> wds;
  size_t dirs = 0;
  while (!todo.empty()) {
    const std::string dir = std::move(todo.back());
    todo.pop_back();
    const UniqueFd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
    if (!d || !watchable(d.get())) return false;
    const int wd = ::inotify_add_watch(notify, dir.c_str(), sync_detail::kWatchedChanges);
    if (wd < 0 || ++dirs > kMaxDirectories) return false;
    wds.push_back(wd);
    const DirPtr ds = open_dir_at(d.get());
    if (!ds) return false;
    while (const dirent* e = ::readdir(ds.get())) {
      const std::string_view n = e->d_name;
      if (n == "." || n == "..") continue;
      unsigned char type = e->d_type;
      if (type == DT_UNKNOWN) {
        struct stat st {};
        if (::fstatat(d.get(), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
          type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
      }
      const std::string path = dir + "/" + std::string(n);
      if (type == DT_DIR) {
        todo.push_back(path);
      } else if (type == DT_REG) {
        const int fw = ::inotify_add_watch(notify, path.c_str(), sync_detail::kWatchedFileChanges);
        if (fw < 0 || wds.size() >= kMaxDirectories + kMaxFiles) return false;
        wds.push_back(fw);
      }
    }
  }
  // Watches of what is no longer in the tree are dropped (their events are not its changes).
  std::sort(wds.begin(), wds.end());
  wds.erase(std::unique(wds.begin(), wds.end()), wds.end());  // a file linked twice inside
  for (const int w : t.wds)
    if (!std::binary_search(wds.begin(), wds.end(), w)) ::inotify_rm_watch(notify, w);
  t.wds = std::move(wds);
  return true;
}

// Its descriptor closed: its watches go with it.
void TreeWatch::forget(const std::string& root) { trees_.erase(root); }

TreeWatch::Answer TreeWatch::ask(const std::string& root, const std::string& token) {
  if (root.empty() || root.front() != '/') return {};
  read_events();
  Tree& t = trees_[root];
  t.used = ++asked_;
  const std::string now = instance_ + "-" + std::to_string(t.epoch);
  if (!t.changed && t.epoch != 0 && token == now) return {true, now};
  // A new epoch: the watches placed (again) before the tree is read.
  t.changed = false;
  if (!watch(root, t)) {
    forget(root);
    return {};
  }
  t.epoch = ++epochs_;
  // The least recently asked trees beyond kMaxTrees are no longer watched.
  while (trees_.size() > kMaxTrees) {
    auto oldest = trees_.begin();
    for (auto it = trees_.begin(); it != trees_.end(); ++it)
      if (it->second.used < oldest->second.used) oldest = it;
    forget(oldest->first);
  }
  return {false, instance_ + "-" + std::to_string(t.epoch)};
}

std::optional<TreeWatch::Answer> ask_tree_watch(const std::string& socket, const std::string& root,
                                                const std::string& token) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (socket.size() >= sizeof a.sun_path || root.find('\n') != std::string::npos ||
      token.find_first_of(" \n") != std::string::npos)
    return std::nullopt;
  std::memcpy(a.sun_path, socket.c_str(), socket.size() + 1);
  const UniqueFd s(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s || ::connect(s.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0)
    return std::nullopt;
  const std::string q = "tree " + (token.empty() ? std::string("-") : token) + " " + root + "\n";
  if (::send(s.get(), q.data(), q.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(q.size()))
    return std::nullopt;
  std::string line;
  char buf[256];
  while (line.find('\n') == std::string::npos && line.size() < 1024) {
    pollfd p{s.get(), POLLIN, 0};
    if (::poll(&p, 1, kAnswerMs) != 1) return std::nullopt;
    const ssize_t got = ::recv(s.get(), buf, sizeof buf, 0);
    if (got <= 0) return std::nullopt;
    line.append(buf, static_cast<size_t>(got));
  }
  line.resize(line.find('\n'));
  if (line.starts_with("unchanged ")) return TreeWatch::Answer{true, line.substr(10)};
  if (line == "read -") return TreeWatch::Answer{false, ""};
  if (line.starts_with("read ")) return TreeWatch::Answer{false, line.substr(5)};
  return std::nullopt;
}

std::string encode_tree(const SyncTree& tree) {
  std::string out;
  out.reserve(tree.entries().size() * 128);
  put_number(out, tree.entries().size());
  for (const TreeEntry& e : tree.entries()) {
    put_text(out, e.path);
    put_number(out, static_cast<uint64_t>(e.kind));
    put_number(out, e.mode);
    put_number(out, e.size);
    put_text(out, e.hash);
    put_text(out, e.target);
    put_text(out, e.source);
  }
  put_number(out, tree.bytes);
  put_number(out, tree.files);
  put_number(out, tree.skipped.size());
  for (const std::string& s : tree.skipped) put_text(out, s);
  put_text(out, tree.ignore_file);
  put_text(out, tree.digest);
  return out;
}

namespace {

struct DecodedHead {
  SyncTree tree;          ///< all but the entries
  std::string_view list;  ///< the entries' bytes
  uint64_t count = 0;     ///< how many
};

// The entries' fields in order; `keep` false: only stepped over.
bool read_entry(Reader& r, TreeEntry* keep) {
  TreeEntry scratch;
  TreeEntry& e = keep != nullptr ? *keep : scratch;
  auto text = [&](std::string& to) {
    const uint64_t n = r.number();
    if (!r.ok || n > r.in.size()) return r.ok = false;
    if (keep != nullptr) to.assign(r.in.substr(0, n));
    r.in.remove_prefix(n);
    return true;
  };
  if (!text(e.path)) return false;
  const uint64_t kind = r.number();
  e.kind = static_cast<TreeEntry::Kind>(kind);
  e.mode = static_cast<uint32_t>(r.number());
  e.size = r.number();
  return text(e.hash) && text(e.target) && text(e.source) && r.ok && kind <= 2;
}

// Checks the whole snapshot, and decodes all of it but the entries, which it only steps over:
// a stepped-over list decodes without fail later.
std::optional<DecodedHead> decode_head(std::string_view bytes) {
  Reader r{bytes};
  DecodedHead d;
  d.count = r.number();
  if (!r.ok || d.count > bytes.size()) return std::nullopt;
  const std::string_view list = r.in;
  for (uint64_t i = 0; i < d.count; ++i)
    if (!read_entry(r, nullptr)) return std::nullopt;
  d.list = list.substr(0, list.size() - r.in.size());
  SyncTree& t = d.tree;
  t.bytes = r.number();
  t.files = r.number();
  const uint64_t skipped = r.number();
  if (!r.ok || skipped > bytes.size()) return std::nullopt;
  for (uint64_t i = 0; i < skipped; ++i) t.skipped.push_back(r.text());
  t.ignore_file = r.text();
  t.digest = r.text();
  if (!r.ok || !r.in.empty()) return std::nullopt;
  return d;
}

std::vector<TreeEntry> decode_entries(std::string_view list, uint64_t count) {
  Reader r{list};
  std::vector<TreeEntry> entries(count);
  for (TreeEntry& e : entries) read_entry(r, &e);
  return entries;
}

}  // namespace

std::optional<SyncTree> decode_tree(std::string_view bytes) {
  auto d = decode_head(bytes);
  if (!d) return std::nullopt;
  d->tree.entries() = decode_entries(d->list, d->count);
  return std::move(d->tree);
}

Result<SyncTree> scan_tree_watched(const SyncSpec& spec, const SyncRules& rules) {
  if (rules.watch_socket.empty() || rules.hash_index_dir.empty()) return scan_tree(spec, rules);
  char real[PATH_MAX];
  if (::realpath(spec.source.c_str(), real) == nullptr) return scan_tree(spec, rules);
  const std::string root = real;
  const std::string key = snapshot_key(root, spec, rules);
  const std::string file = snapshot_file(rules, key);
  // The snapshot of the launch before: its token, then what it was read with, then the tree.
  std::string token;
  std::optional<MappedFile> snap;
  if (auto m = MappedFile::open(file, size_t{1} << 30, "snapshot")) {
    std::string_view v = m->text();
    if (v.starts_with(kSnapshotMagic)) {
      v.remove_prefix(kSnapshotMagic.size());
      const size_t nl = v.find('\n');
      if (nl != std::string_view::npos && v.substr(nl + 1).starts_with(key)) {
        token = std::string(v.substr(0, nl));
        snap = std::move(*m);
      }
    }
  }
  const auto answer = ask_tree_watch(rules.watch_socket, root, token);
  if (answer && answer->unchanged && snap) {
    std::string_view v = snap->text();
    v.remove_prefix(kSnapshotMagic.size() + token.size() + 1 + key.size());
    if (auto d = decode_head(v)) {
      if (rules.max_bytes > 0 && d->tree.bytes > rules.max_bytes) return scan_tree(spec, rules);
      // The entries are decoded only if a host lacks the tree: from the mapped snapshot, which
      // no launch rewrites in place (a new one replaces it by a rename).
      auto mapped = std::make_shared<const MappedFile>(std::move(*snap));
      d->tree.defer_entries(
          [mapped, list = d->list, count = d->count] { return decode_entries(list, count); });
      d->tree.from_snapshot = true;
      return std::move(d->tree);
    }
  }
  auto tree = scan_tree(spec, rules);
  if (!tree || !answer || answer->token.empty()) {
    ::unlink(file.c_str());
    return tree;
  }
  // For the next launch, with the token of the watch that was on before this reading began,
  // and the tree's digest (which read_sync_request() takes as it is for a tree alone).
  if (auto digest = tree_digest(tree->entries())) tree->digest = *digest;
  const std::string tmp = file + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc | std::ios::binary);
    out << kSnapshotMagic << answer->token << '\n' << key << encode_tree(*tree);
    if (!out.flush()) {
      ::unlink(tmp.c_str());
      return tree;
    }
  }
  if (::rename(tmp.c_str(), file.c_str()) != 0) ::unlink(tmp.c_str());
  return tree;
}

}  // namespace ferry
