// ferryd's side of --sync.
#include "sync_receiver.hpp"

#include <algorithm>

namespace ferry {

namespace {

bool is_digest(const std::string& d) {
  return d.size() == 64 && std::all_of(d.begin(), d.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace

SyncReceiver::~SyncReceiver() {
  filling_.reset();  // done or given up before the copy moves
  // Kept for the next job of this tree here (its ranks are gone by now).
  if (!copy_.empty()) cache_->keep_spare(copy_, digest_, stamps_, stamps_file_);
  // Files half received when ferryrun went away; a spare taken but not yet mended.
  if (cache_)
    for (const std::string& h : pending_) cache_->discard(h);
  if (spare_) FileCache::remove_copy(spare_->path);
}

bool SyncReceiver::open_cache() {
  if (cache_) return true;
  auto c = FileCache::open(FileCache::default_base());
  if (!c) {
    failed_ = true;
    send_(wire::encode(wire::SyncNeed{{}, c.error().message}));
    return false;
  }
  cache_.emplace(std::move(*c));
  cache_->evict_hourly(FileCache::kKeepSeconds, FileCache::kKeepBytes);
  copy_name_ = fresh_copy_name();
  return true;
}

void SyncReceiver::probe(const wire::SyncProbe& p) {
  if (probed_ || cache_ || failed_) return fail("a second sync probe");
  probed_ = true;
  if (!open_cache()) return;
  if (is_digest(p.digest)) {
    if (auto spare = cache_->take_untouched_spare(p.digest, copy_name_)) {
      digest_ = p.digest;
      copy_ = spare->path;
      stamps_ = std::move(spare->stamps);
      stamps_file_ = std::move(spare->stamps_file);
      send_(wire::encode(wire::SyncReady{copy_, "",
                                         spare->watched
                                             ? "a kept copy, untouched as the pool's watch saw it"
                                             : "a kept copy, each entry checked"}));
      return;
    }
  }
  wire::SyncNeed want;
  want.offer_wanted = true;
  send_(wire::encode(want));
}

void SyncReceiver::offer(wire::SyncOffer& o) {
  if (offered_ || !copy_.empty() || failed_) return fail("a second sync offer");
  offered_ = true;
  if (!open_cache()) return;
  if (is_digest(o.digest)) digest_ = o.digest;
  entries_.reserve(o.items.size());
  for (wire::SyncItem& i : o.items) {  // taken: the offer is not read again
    TreeEntry e;
    e.path = std::move(i.path);
    e.kind = static_cast<TreeEntry::Kind>(i.kind);
    e.mode = i.mode;
    e.size = i.size;
    e.hash = std::move(i.hash);
    e.target = std::move(i.target);
    entries_.push_back(std::move(e));
  }
  // A spare copy of this tree here: the files it needs again are all the cache must hold.
  spare_ = cache_->take_spare(entries_, digest_, copy_name_);
  std::vector<std::string> need;
  if (spare_) {
    std::vector<TreeEntry> changed;
    for (size_t i : spare_->changed) changed.push_back(entries_[i]);
    need = cache_->missing(changed);
  } else {
    // What the cache lacks goes straight into the job's copy.
    need = cache_->missing(entries_);
    auto b = CopyBuilder::start(*cache_, entries_, copy_name_, need);
    if (!b) return fail(b.error().message);
    building_.emplace(std::move(*b));
  }
  pending_.insert(need.begin(), need.end());
  // What the cache keeps costs a stat per cached file (as much as the rest of the offer): said
  // only under --verbose, when files are sent.
  const CacheUsage u = need.empty() || !o.usage_wanted ? CacheUsage{} : cache_->usage();
  send_(wire::encode(wire::SyncNeed{std::move(need), "", u.bytes, static_cast<uint32_t>(u.files)}));
  if (pending_.empty()) ready();
}

void SyncReceiver::data(const wire::SyncData& d) {
  if (!cache_ || failed_) return;
  if (!pending_.contains(d.hash)) return fail("sync data for a file not asked for");
  if (Status st = building_ ? building_->receive(d.hash, d.data, d.last)
                            : cache_->receive(d.hash, d.data, d.last);
      !st)
    return fail(st.error().message);
  send_(wire::encode(wire::SyncAck{d.data.size()}));
  if (!d.last) return;
  pending_.erase(d.hash);
  if (pending_.empty()) ready();
}

void SyncReceiver::ready() {
  // A copy of a large tree may take longer than ferryrun waits for a silent host (on a busy
  // host, many seconds): an empty acknowledgement about once a second says this one works on.
  const StillWorking still_working{[this] { send_(wire::encode(wire::SyncAck{0})); }};
  std::string how = "a new copy";
  if (spare_) {
    how = "a kept copy, " + std::to_string(spare_->changed.size()) + " of its entries mended";
    if (Status st = cache_->mend_spare(*spare_, entries_, still_working); !st)
      return fail(st.error().message);
    copy_ = spare_->path;
    stamps_ = spare_->changed.empty() ? std::move(spare_->stamps)
                                      : FileCache::restamp_copy(*spare_, entries_);
    spare_.reset();
  } else {
    auto made = building_->finish(still_working);
    if (!made) {
      building_.reset();
      return fail(made.error().message);
    }
    copy_ = *made;
    stamps_ = FileCache::stamp_copy(copy_, entries_);
    received_ = building_->received();  // into the cache while the job runs
    building_.reset();
  }
  send_(wire::encode(wire::SyncReady{copy_, "", how}));
}

void SyncReceiver::job_started() {
  if (received_.empty() || !cache_) return;
  filling_.emplace(*cache_, std::move(received_));
  received_.clear();
}

void SyncReceiver::fail(const std::string& why) {
  failed_ = true;
  send_(wire::encode(wire::SyncReady{"", why, ""}));
}

std::string SyncReceiver::inside_copy(const std::string& wdir) const {
  if (copy_.empty() || (!wdir.empty() && wdir.front() == '/')) return wdir;
  return wdir.empty() ? copy_ : copy_ + "/" + wdir;
}

}  // namespace ferry
