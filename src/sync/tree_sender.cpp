// One host's files of a synced tree, read in pieces within a window.
#include "ferry/sync/tree_sender.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>
#include <unordered_set>

namespace ferry {

TreeSender::TreeSender(std::shared_ptr<const SyncTree> tree) : tree_(std::move(tree)) {}

// No index of the tree by hash: one built per host cost ferryrun more than this pass (at 32
// hosts and 2,000 files, 64,000 insertions before the last host was even asked).
Status TreeSender::need(const std::vector<std::string>& hashes) {
  std::unordered_set<std::string_view> asked(hashes.begin(), hashes.end());
  for (const TreeEntry& e : tree_->entries()) {
    if (asked.empty()) break;
    if (e.kind != TreeEntry::Kind::kFile || asked.erase(e.hash) == 0) continue;
    wanted_.push_back(&e);
    bytes_wanted_ += e.size;
  }
  if (!asked.empty()) return make_error("asked for a file the tree does not hold");
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
