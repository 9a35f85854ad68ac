// ferryd's side of --sync.
#include "sync_receiver.hpp"

namespace ferry {

SyncReceiver::~SyncReceiver() {
  // Kept for the next job of this tree here (its ranks are gone by now).
  if (!copy_.empty()) cache_->keep_spare(copy_, tree_digest(entries_), stamps_);
  // Files half received when ferryrun went away; a spare taken but not yet mended.
  if (cache_)
    for (const std::string& h : pending_) cache_->discard(h);
  if (spare_) FileCache::remove_copy(spare_->path);
}

void SyncReceiver::offer(const wire::SyncOffer& o) {
  if (cache_ || failed_) return fail("a second sync offer");
  auto c = FileCache::open(FileCache::default_base());
  if (!c) {
    failed_ = true;
    send_(wire::encode(wire::SyncNeed{{}, c.error().message}));
    return;
  }
  cache_.emplace(std::move(*c));
  cache_->evict_hourly(FileCache::kKeepSeconds, FileCache::kKeepBytes);
  entries_.reserve(o.items.size());
  for (const wire::SyncItem& i : o.items) {
    TreeEntry e;
    e.path = i.path;
    e.kind = static_cast<TreeEntry::Kind>(i.kind);
    e.mode = i.mode;
    e.size = i.size;
    e.hash = i.hash;
    e.target = i.target;
    entries_.push_back(std::move(e));
  }
  // A spare copy of this tree here: the files it needs again are all the cache must hold.
  copy_name_ = fresh_copy_name();
  spare_ = cache_->take_spare(entries_, tree_digest(entries_), copy_name_);
  std::vector<std::string> need;
  if (spare_) {
    std::vector<TreeEntry> changed;
    for (size_t i : spare_->changed) changed.push_back(entries_[i]);
    need = cache_->missing(changed);
  } else {
    need = cache_->missing(entries_);
  }
  pending_.insert(need.begin(), need.end());
  // What the cache keeps costs a stat per cached file: said only when files are sent.
  const CacheUsage u = need.empty() ? CacheUsage{} : cache_->usage();
  send_(wire::encode(wire::SyncNeed{std::move(need), "", u.bytes, static_cast<uint32_t>(u.files)}));
  if (pending_.empty()) ready();
}

void SyncReceiver::data(const wire::SyncData& d) {
  if (!cache_ || failed_) return;
  if (!pending_.contains(d.hash)) return fail("sync data for a file not asked for");
  if (Status st = cache_->receive(d.hash, d.data, d.last); !st) return fail(st.error().message);
  send_(wire::encode(wire::SyncAck{d.data.size()}));
  if (!d.last) return;
  pending_.erase(d.hash);
  if (pending_.empty()) ready();
}

void SyncReceiver::ready() {
  if (spare_) {
    if (Status st = cache_->mend_spare(*spare_, entries_); !st) return fail(st.error().message);
    copy_ = spare_->path;
    stamps_ = spare_->changed.empty() ? std::move(spare_->stamps)
                                      : FileCache::stamp_copy(copy_, entries_);
    spare_.reset();
  } else {
    auto made = cache_->materialize(entries_, copy_name_);
    if (!made) return fail(made.error().message);
    copy_ = *made;
    stamps_ = FileCache::stamp_copy(copy_, entries_);
  }
  send_(wire::encode(wire::SyncReady{copy_, ""}));
}

void SyncReceiver::fail(const std::string& why) {
  failed_ = true;
  send_(wire::encode(wire::SyncReady{"", why}));
}

std::string SyncReceiver::inside_copy(const std::string& wdir) const {
  if (copy_.empty() || (!wdir.empty() && wdir.front() == '/')) return wdir;
  return wdir.empty() ? copy_ : copy_ + "/" + wdir;
}

}  // namespace ferry
