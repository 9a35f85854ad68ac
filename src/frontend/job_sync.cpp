// --sync: before an attempt's ranks start, every host of it that lacks the job's tree gets it.
// Each host says which files its cache lacks; they go to all hosts at once, a window of bytes
// per host (TreeSender); once a host's copy is in place, it is synced for as long as its ferryd
// lives (a restart on the same connection keeps the copy). The preflight goes on meanwhile
// (start_gated()); once both are done, the HostSpecs go. A host that leaves --start-timeout
// seconds between two answers fails the start (a large tree may take longer than that in all,
// never that long without a word).
#include "ferry/sync/tree_sender.hpp"
#include "job_follow_up.hpp"
#include "job_impl.hpp"

namespace ferry {

namespace {

std::string files_text(size_t n) { return std::to_string(n) + (n == 1 ? " file" : " files"); }

}  // namespace

// The tree comes read (opts_.sync), or is read on a thread of its own while the hosts are
// reached: no host is asked before it is read; one that greets sooner is asked then.
void Job::Impl::read_sync_tree() {
  sync_ = opts_.sync;
  if (sync_ || !opts_.sync_request || opts_.check) return;
  sync_reader_ = std::make_unique<TreeReader>(
      *opts_.sync_request, [this, alive = alive_](Result<SyncTree> tree) {
        auto read = std::make_shared<Result<SyncTree>>(std::move(tree));
        asio::post(io_, [this, alive, read] {
          if (*alive) on_tree_read(std::move(*read));
        });
      });
}

// A tree the reading refuses ends the job as a bad command line does: one line, exit status
// 2, and nothing of it sent (the hosts reached so far are closed, the others given up).
void Job::Impl::on_tree_read(Result<SyncTree> tree) {
  if (phase_ == Phase::kFinishing) return;
  if (!tree) {
    diag_.end_progress();
    diag_.error(tree.error().message);
    attempt_.end.refused();
    launchers_.remote.cancel_all();
    return finish_job();
  }
  for (const std::string& line : tree->skipped) diag_.warn("--sync: " + line);
  sync_ = std::make_shared<const SyncTree>(std::move(*tree));
  if (sync_waits_tree_) {
    sync_waits_tree_ = false;
    return start_sync();
  }
  if (phase_ != Phase::kStarting) return;
  for (size_t i = 0; i < hosts_.size(); ++i)
    if (hosts_[i]->hello && !hosts_[i]->closed) probe_sync(i);
}

bool Job::Impl::want_sync() const {
  if (!syncing()) return false;
  for (size_t m : attempt_.members)
    if (!hosts_[m]->synced) return true;
  return false;
}

// The tree's list, encoded once for every host that asks for it.
const std::string& Job::Impl::sync_offer_frame() {
  if (!sync_offer_.empty()) return sync_offer_;
  wire::SyncOffer offer;
  offer.items.reserve(sync_->entries().size());
  for (const TreeEntry& e : sync_->entries())
    offer.items.push_back({e.path, static_cast<uint8_t>(e.kind), e.mode, e.size, e.hash, e.target});
  offer.digest = sync_->digest;
  offer.usage_wanted = opts_.verbose;
  sync_offer_ = wire::encode(offer);
  return sync_offer_;
}

// Each host is asked first whether it keeps an untouched copy of the tree (its digest alone);
// those that do not get the tree's list. Without a digest, the list at once. Before the first
// attempt a host is asked as soon as its ferryd greets: its answer (and its files, if it lacks
// some) comes while the other hosts are still being reached, and the attempt waits only for
// what has not come yet.
void Job::Impl::probe_sync(size_t i) {
  HostLink& h = *hosts_[i];
  if (!syncing() || !sync_ || h.synced || h.sync) return;  // asked once the tree is read
  if (!sync_told_)
    diag_.verbose("sync: " + files_text(sync_->files) + ", " + bytes_text(sync_->bytes) + " (" +
                  (sync_->from_snapshot
                       ? std::string("the tree not read: unchanged since the launch before, as "
                                     "the warm pool's watch saw")
                       : std::to_string(sync_->files_read) +
                             " read for their hashes, the others unchanged since a launch read "
                             "them") +
                  "), to the hosts that lack them (after " + since_start() + ")");
  sync_told_ = true;
  h.sync = std::make_unique<TreeSender>(sync_);
  h.sync_heard = Clock::now();
  h.link->send(sync_->digest.empty() ? sync_offer_frame()
                                     : wire::encode(wire::SyncProbe{sync_->digest}));
}

// A host that joins the running attempt (elastic Horovod) gets the tree first: true when it is
// asked for it now; once its copy is in place, on_sync_ready() gives it back to the follow-up
// (host_ready()), and a failed sync loses it (sync_failed()).
bool Job::Impl::sync_before_join(size_t i) {
  HostLink& h = *hosts_[i];
  if (!syncing() || h.synced) return false;
  h.join_after_sync = true;
  probe_sync(i);
  watch_sync();
  return true;
}

void Job::Impl::start_sync() {
  if (!sync_) {
    sync_waits_tree_ = true;  // on_tree_read() comes back here
    return;
  }
  sync_on_ = true;
  for (size_t m : attempt_.members) {
    HostLink& h = *hosts_[m];
    if (!h.sync_error.empty()) return sync_failed(m, h.sync_error);
    if (h.synced) continue;
    ++sync_progress_.hosts;
    probe_sync(m);  // unless it was asked when it greeted
  }
  if (!want_sync()) return after_sync();  // every copy came while the hosts were reached
  show_sync_progress(true);
  watch_sync();
}

// Once a second while files are on their way: a host silent for --start-timeout fails.
void Job::Impl::watch_sync() {
  sync_timer_.expires_after(std::chrono::seconds(1));
  sync_timer_.async_wait([this](std::error_code ec) {
    if (ec || phase_ == Phase::kFinishing) return;
    const auto limit = std::chrono::seconds(opts_.start_timeout_s);
    bool waiting = false;
    for (size_t i = 0; i < hosts_.size(); ++i) {
      HostLink& h = *hosts_[i];
      if (!h.sync) continue;
      if (Clock::now() - h.sync_heard < limit) {
        waiting = true;
        continue;
      }
      return sync_failed(i, "no answer for " + std::to_string(opts_.start_timeout_s) +
                                " s (--start-timeout) while its tree was on its way");
    }
    if (waiting) watch_sync();
  });
}

void Job::Impl::on_sync_need(size_t i, const wire::SyncNeed& m) {
  HostLink& h = *hosts_[i];
  if (!h.sync) return on_broken(i, "a sync answer it was not asked for");
  if (!m.error.empty()) return sync_failed(i, m.error);
  h.sync_heard = Clock::now();
  if (m.offer_wanted) return h.link->send(sync_offer_frame());
  if (Status st = h.sync->need(m.hashes); !st) return on_broken(i, st.error().message);
  diag_.verbose("sync: " + h.name() + " lacks " + std::to_string(m.hashes.size()) + " of " +
                files_text(sync_->files) + " (" + bytes_text(h.sync->bytes_wanted()) + ")" +
                (m.hashes.empty() ? std::string()
                                  : "; its cache keeps " + files_text(m.cache_files) + ", " +
                                        bytes_text(m.cache_bytes)) +
                " (after " + since_start() + ")");
  sync_progress_.wanted += h.sync->bytes_wanted();
  show_sync_progress(true);
  send_sync_pieces(i);
}

void Job::Impl::on_sync_ack(size_t i, const wire::SyncAck& m) {
  HostLink& h = *hosts_[i];
  if (!h.sync) return;
  h.sync_heard = Clock::now();
  h.sync->acked(m.bytes);
  sync_progress_.acked += m.bytes;
  show_sync_progress(false);
  send_sync_pieces(i);
}

// On a terminal (without --verbose), one line redrawn at most every 100 ms: "sync: 12.0 MiB
// of 40.0 MiB sent, 1 of 4 hosts ready".
void Job::Impl::show_sync_progress(bool now) {
  if (!sync_on_) return;  // the hosts are still being reached: their progress is on the line
  const auto t = Clock::now();
  if (!now && t - sync_progress_.drawn < std::chrono::milliseconds(100)) return;
  sync_progress_.drawn = t;
  diag_.progress(diag_.program() + ": sync: " + bytes_text(sync_progress_.acked) + " of " +
                 bytes_text(sync_progress_.wanted) + " sent, " +
                 std::to_string(sync_progress_.ready) + " of " +
                 std::to_string(sync_progress_.hosts) + " hosts ready");
}

void Job::Impl::send_sync_pieces(size_t i) {
  HostLink& h = *hosts_[i];
  auto pieces = h.sync->next();
  if (!pieces) return sync_failed(i, pieces.error().message);
  for (TreeSender::Piece& p : *pieces)
    h.link->send(wire::encode(wire::SyncData{std::move(p.hash), std::move(p.data), p.last}));
}

void Job::Impl::on_sync_ready(size_t i, const wire::SyncReady& m) {
  HostLink& h = *hosts_[i];
  if (!h.sync) return on_broken(i, "a synced copy it was not asked for");
  if (!m.error.empty()) return sync_failed(i, m.error);
  const size_t sent = h.sync->files_sent();
  diag_.verbose("sync: " + h.name() + ": sent " + files_text(sent) + " (" +
                bytes_text(h.sync->bytes_wanted()) + "); the ranks start in " + m.path + " (" +
                (m.how.empty() ? "" : m.how + "; ") + "after " + since_start() + ")");
  h.sync.reset();
  h.synced = true;
  if (h.join_after_sync) {  // a host that joins the running attempt (elastic Horovod)
    h.join_after_sync = false;
    if (phase_ == Phase::kRunning) follow_up_->host_ready(i);
    return;
  }
  if (!sync_on_) return;
  ++sync_progress_.ready;
  show_sync_progress(true);
  if (!want_sync()) after_sync();
}

// Before the attempt's sync began (the hosts still being reached), the failure waits for it.
void Job::Impl::sync_failed(size_t i, const std::string& why) {
  hosts_[i]->sync.reset();
  // A host joining the running attempt: lost, as a host that fails before its workers start.
  if (hosts_[i]->join_after_sync) {
    diag_.error("--sync: " + hosts_[i]->name() + ": " + why);
    return on_broken(i, "--sync failed");
  }
  if (phase_ == Phase::kStarting) {
    hosts_[i]->sync_error = why;
    return;
  }
  if (phase_ == Phase::kFinishing) return;
  diag_.error("--sync: " + hosts_[i]->name() + ": " + why);
  attempt_.end.start_failed();
  finish_job();
}

void Job::Impl::after_sync() {
  sync_on_ = false;
  sync_told_ = false;
  sync_progress_ = {};
  sync_timer_.cancel();
  diag_.end_progress();
  sync_done();
}

}  // namespace ferry
