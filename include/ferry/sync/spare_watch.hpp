#pragma once
/// \file
/// A warm pool host's watch over its spare copies (docs/sync.md, *The cache on each host*).
/// Without it, a job that takes the spare of its tree checks the spare's every entry's stamp
/// (a stat each) before its ranks may start in it. A pool's host process lives from job to
/// job, so it can do better: as soon as a spare is kept, it watches each of the spare's
/// directories and regular files with inotify, and only then checks the stamps (on a thread
/// of low priority). From then on any change in the spare (a write, by any name of the file,
/// a hard link added, a file opened for writing and closed, a chmod, a name added, removed or
/// renamed) is an event, and a spare with no event since is untouched. A job's ferryd asks the
/// watch about the spare it is about to take, over a Unix socket of this host (abstract, the
/// same user's alone on both ends: SO_PEERCRED); the watch reads every event queued before it
/// answers, and any doubt (no watch, no answer within a moment, an event queue that
/// overflowed) leaves the check to the ferryd, as without a pool.
///
/// Abstract names are shared by every process of a network namespace, and hosts can share one
/// while each sees its own files (containers run with the host's network, beside the host
/// itself). So the socket is named by the cache folder's device and inode as well as its path,
/// and a question names the spare's top directory by its device and inode as the asker sees
/// it: a watch vouches only for the very directory it watched, and each such host's pool
/// serves its own ferryds.
///
/// A spare taken on the watch's word stays watched while its job runs in it (its watches
/// follow its inodes through the renames): kept again with no event in between, it is
/// untouched without a second check. So a tree launched again and again through a pool is
/// checked once, after the job that made its copy, and never again while nothing changes.
///
/// What inotify does not tell, and so what a watched spare does not see either: a write
/// through a shared mapping of one of its files made while the mapping lives (the file's
/// last mapping's end, or its descriptor's close, is an event; the job's ranks are gone by
/// the time a spare is kept: only a process that outlived its job could hold one).

#include <cstdint>
#include <memory>
#include <string>

namespace ferry {

class SpareWatch {
 public:
  /// How the stamps of a kept spare are checked: on a thread that runs only when a CPU is
  /// idle (SCHED_IDLE), or (`kNow`) at the thread's normal priority.
  enum class Checks : uint8_t { kWhenIdle, kNow };
  /// Watches the spares of the cache at `base` (FileCache's) on threads of its own until
  /// destroyed. Serves no one (and watches nothing) where another process already serves that
  /// cache on this host, or where inotify or the socket cannot be had.
  explicit SpareWatch(std::string base, Checks checks = Checks::kWhenIdle);
  ~SpareWatch();
  SpareWatch(const SpareWatch&) = delete;
  SpareWatch& operator=(const SpareWatch&) = delete;

  /// Whether it serves (its socket bound, its threads running).
  bool serving() const;
  /// How many spares it has checked entry by entry so far (the others it vouched for without
  /// a check, having watched them since their last one).
  uint64_t checks_run() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Asks the watch over the cache at `base` on this host, where one serves it, whether the spare
/// `name` (under `base`/spares) is untouched: true only when the watch watched it since before
/// a check of all its stamps found them as kept, and has seen no change in it since. False
/// (the caller checks the stamps itself) on any doubt.
bool spare_watch_untouched(const std::string& base, const std::string& name);

}  // namespace ferry
