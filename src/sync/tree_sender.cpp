// One host's files of a synced tree, read in pieces within a window.
#include "ferry/sync/tree_sender.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ferry {

TreeSender::TreeSender(std::shared_ptr<const SyncTree> tree) : tree_(std::move(tree)) {
  for (const TreeEntry& e : tree_->entries)
    if (e.kind == TreeEntry::Kind::kFile) by_hash_.emplace(e.hash, &e);
}

Status TreeSender::need(const std::vector<std::string>& hashes) {
  for (const std::string& h : hashes) {
    auto it = by_hash_.find(h);
    if (it == by_hash_.end()) return make_error("asked for a file the tree does not hold");
    wanted_.push_back(it->second);
    bytes_wanted_ += it->second->size;
  }
  return {};
}

Result<std::vector<TreeSender::Piece>> TreeSender::next() {
  std::vector<Piece> out;
  while (next_ < wanted_.size() && in_flight_ < kWindow) {
    const TreeEntry& e = *wanted_[next_];
    if (!fd_) {
      fd_.reset(::open(e.source.c_str(), O_RDONLY | O_CLOEXEC));
      if (!fd_) return make_error(e.source + ": " + std::strerror(errno));
      offset_ = 0;
    }
    const size_t want = static_cast<size_t>(std::min<uint64_t>(kPiece, e.size - offset_));
    Piece p;
    p.hash = e.hash;
    p.data.resize(want);
    size_t got = 0;
    while (got < want) {
      const ssize_t n =
          ::pread(fd_.get(), p.data.data() + got, want - got, static_cast<off_t>(offset_ + got));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return make_error(e.source + ": " + std::strerror(errno));
      if (n == 0) return make_error(e.source + ": changed while it was synced (shorter)");
      got += static_cast<size_t>(n);
    }
    offset_ += want;
    in_flight_ += want;
    p.last = offset_ == e.size;
    if (p.last) {
      fd_.reset();
      ++next_;
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace ferry
