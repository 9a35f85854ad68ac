// A job's copy built on a host: the files its cache lacks received straight into it.
#include "ferry/sync/copy_builder.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <unordered_map>

#include "copy_out.hpp"
#include "ferry/common/posix_handles.hpp"
#include "ferry/transport/content_hash.hpp"

namespace ferry {

namespace fs = std::filesystem;

using sync_detail::errno_text;

struct CopyBuilder::State {
  const FileCache* cache = nullptr;
  std::vector<TreeEntry> entries;
  std::string tmp, final_dir;
  bool finished = false;
  // A file on its way: where it goes (the first entry of its hash), what came of it so far.
  struct Incoming {
    static constexpr size_t kNone = static_cast<size_t>(-1);
    size_t entry = kNone;
    UniqueFd fd;
    std::optional<ContentHash> digest;
    bool done = false;
  };
  std::unordered_map<std::string, Incoming> incoming;  // by hash

  State() = default;
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  State(State&&) = delete;
  State& operator=(State&&) = delete;
  ~State() {
    if (!finished && !tmp.empty()) FileCache::remove_copy(tmp);
  }
};

CopyBuilder::CopyBuilder(std::unique_ptr<State> s) : s_(std::move(s)) {}
CopyBuilder::CopyBuilder(CopyBuilder&&) noexcept = default;
CopyBuilder& CopyBuilder::operator=(CopyBuilder&&) noexcept = default;
CopyBuilder::~CopyBuilder() = default;

Result<CopyBuilder> CopyBuilder::start(const FileCache& cache,
                                       const std::vector<TreeEntry>& entries,
                                       const std::string& name,
                                       const std::vector<std::string>& receiving) {
  auto s = std::make_unique<State>();
  s->cache = &cache;
  s->entries = entries;
  s->final_dir = cache.base() + "/jobs/" + name;
  s->tmp = s->final_dir + ".part";
  FileCache::remove_copy(s->tmp);
  if (::mkdir(s->tmp.c_str(), 0700) != 0) {
    const std::string why = s->tmp + ": " + errno_text();
    s->tmp.clear();  // not ours to remove
    return make_error(why);
  }
  for (const std::string& h : receiving) s->incoming.emplace(h, State::Incoming{});
  for (size_t i = 0; i < s->entries.size(); ++i) {
    const TreeEntry& e = s->entries[i];
    const std::string to = s->tmp + "/" + e.path;
    switch (e.kind) {
      case TreeEntry::Kind::kDirectory:
        // Searchable and writable by its owner until finish() gives it its own mode.
        if (::mkdir(to.c_str(), 0700) != 0 && errno != EEXIST)
          return make_error(to + ": " + errno_text());
        break;
      case TreeEntry::Kind::kSymlink:
        if (::symlink(e.target.c_str(), to.c_str()) != 0)
          return make_error(to + ": " + errno_text());
        break;
      case TreeEntry::Kind::kFile:
        if (auto in = s->incoming.find(e.hash);
            in != s->incoming.end() && in->second.entry == State::Incoming::kNone)
          in->second.entry = i;
        break;
    }
  }
  for (const auto& [hash, in] : s->incoming)
    if (in.entry == State::Incoming::kNone)
      return make_error("a synced file " + hash.substr(0, std::min<size_t>(hash.size(), 12)) +
                        "... to receive that the tree does not hold");
  return CopyBuilder(std::move(s));
}

Status CopyBuilder::receive(const std::string& hash, std::string_view bytes, bool last) {
  auto it = s_->incoming.find(hash);
  if (it == s_->incoming.end() || it->second.done)
    return make_error("a synced file " + hash.substr(0, std::min<size_t>(hash.size(), 12)) +
                      "... not asked for");
  State::Incoming& in = it->second;
  const TreeEntry& e = s_->entries[in.entry];
  const std::string to = s_->tmp + "/" + e.path;
  auto fail = [&](const std::string& why) -> Status {
    in.fd.reset();
    in.digest.reset();
    ::unlink(to.c_str());
    return make_error(why);
  };
  if (!in.digest) {
    auto d = ContentHash::start();
    if (!d) return d.error();
    in.digest.emplace(std::move(*d));
    in.fd.reset(::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!in.fd) return fail(to + ": " + errno_text());
  }
  in.digest->update(bytes);
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(in.fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(to + ": " + errno_text());
    done += static_cast<size_t>(n);
  }
  if (!last) return {};
  if (in.digest->hex() != hash)
    return fail("synced file " + hash.substr(0, 12) + "...: the bytes received do not match it");
  if (::fchmod(in.fd.get(), e.mode) != 0) return fail(to + ": " + errno_text());
  in.fd.reset();
  in.digest.reset();
  in.done = true;
  return {};
}

Result<std::string> CopyBuilder::finish(const StillWorking& still) {
  sync_detail::Heartbeat alive(still);
  auto fail = [&](const std::string& why) -> Result<std::string> {
    FileCache::remove_copy(s_->tmp);
    s_->tmp.clear();
    return make_error(why);
  };
  std::vector<const TreeEntry*> dirs;
  for (size_t i = 0; i < s_->entries.size(); ++i) {
    const TreeEntry& e = s_->entries[i];
    alive();
    if (e.kind == TreeEntry::Kind::kDirectory) dirs.push_back(&e);
    if (e.kind != TreeEntry::Kind::kFile) continue;
    const std::string to = s_->tmp + "/" + e.path;
    auto in = s_->incoming.find(e.hash);
    if (in == s_->incoming.end()) {
      if (Status st = sync_detail::copy_out(s_->cache->path_of(e.hash), to, e.mode); !st)
        return fail(st.error().message);
      continue;
    }
    if (!in->second.done) return fail(to + ": its file was not received");
    if (in->second.entry == i) continue;  // received here
    // The same bytes under a second name: copied from the first.
    std::error_code ec;
    fs::copy_file(s_->tmp + "/" + s_->entries[in->second.entry].path, to, ec);
    if (ec) return fail(to + ": " + ec.message());
    if (::chmod(to.c_str(), e.mode) != 0) return fail(to + ": " + errno_text());
  }
  // Directories' own modes last, children first: a read-only one is filled before it is.
  std::reverse(dirs.begin(), dirs.end());
  for (const TreeEntry* d : dirs) ::chmod((s_->tmp + "/" + d->path).c_str(), d->mode);
  if (::rename(s_->tmp.c_str(), s_->final_dir.c_str()) != 0)
    return fail(s_->final_dir + ": " + errno_text());
  s_->finished = true;
  return s_->final_dir;
}

std::vector<CopyBuilder::Received> CopyBuilder::received() const {
  std::vector<Received> out;
  if (!s_->finished) return out;
  std::vector<size_t> at;
  at.reserve(s_->incoming.size());
  for (const auto& [hash, in] : s_->incoming) at.push_back(in.entry);
  std::sort(at.begin(), at.end());  // the tree's order, as they were sent
  for (size_t i : at) {
    const TreeEntry& e = s_->entries[i];
    out.push_back({e.hash, s_->final_dir + "/" + e.path, e.size});
  }
  return out;
}

}  // namespace ferry
