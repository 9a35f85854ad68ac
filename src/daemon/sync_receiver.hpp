#pragma once
// ferryd's side of --sync: the offered tree checked against this host's cache (FileCache), the
// files it lacks received (straight into the job's copy, CopyBuilder, which the cache then takes
// them from, CacheFiller; or, to mend a spare copy of the tree, into the cache), the job's copy
// made, and kept as a spare when ferryd ends.

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ferry/sync/cache_filler.hpp"
#include "ferry/sync/copy_builder.hpp"
#include "ferry/sync/file_cache.hpp"
#include "ferry/wire/messages.hpp"

namespace ferry {

class SyncReceiver {
 public:
  /// `send` gets each encoded frame (SyncNeed, SyncAck, SyncReady).
  explicit SyncReceiver(std::function<void(const std::string&)> send) : send_(std::move(send)) {}
  /// Keeps the job's copy as a spare for the next job of the same tree.
  ~SyncReceiver();
  SyncReceiver(const SyncReceiver&) = delete;
  SyncReceiver& operator=(const SyncReceiver&) = delete;

  /// The tree's digest: a spare copy of it, untouched, is the job's copy at once (SyncReady);
  /// else SyncNeed asks for the offer.
  void probe(const wire::SyncProbe& p);
  void offer(wire::SyncOffer& o);  ///< takes the offer's items
  void data(const wire::SyncData& d);
  /// The job's ranks start: the cache takes in the files the copy received meanwhile (not
  /// before: until every host has its copy, a host's CPUs and disk go to receiving).
  void job_started();
  /// Whether a sync is under way: asked, and neither its copy in place nor failed.
  bool busy() const { return (probed_ || offered_) && copy_.empty() && !failed_; }
  /// The job's copy ("" before SyncReady, or without --sync).
  const std::string& copy() const { return copy_; }
  /// `wdir` taken inside the copy when relative ("" = the copy itself); unchanged when
  /// absolute or without a copy.
  std::string inside_copy(const std::string& wdir) const;

 private:
  bool open_cache();
  void ready();
  void fail(const std::string& why);

  std::function<void(const std::string&)> send_;
  std::optional<FileCache> cache_;
  std::vector<TreeEntry> entries_;
  std::set<std::string> pending_;  // hashes still to come
  bool probed_ = false, offered_ = false;
  std::string digest_;  // the tree's: its copy is kept as a spare under it ("" not kept)
  std::string copy_name_;
  std::optional<FileCache::SpareCopy> spare_;    // taken, until it is mended
  std::optional<CopyBuilder> building_;          // the copy, without a spare, until it is made
  std::vector<CopyBuilder::Received> received_;  // for the cache, once the job starts
  std::optional<CacheFiller> filling_;           // the cache, from the copy made
  std::string copy_;
  FileCache::CopyStamps stamps_;  // the copy as made
  std::string stamps_file_;       // a file that holds stamps_ already (an untouched spare's)
  bool failed_ = false;
};

}  // namespace ferry
