#pragma once
/// \file
/// A warm pool host's watch over its spare copies (docs/sync.md, *The cache on each host*).
/// Without it, a job that takes the spare of its tree checks the spare's every entry's stamp
/// (a stat each) before its ranks may start in it. A pool's host process lives from job to
/// job, so it can do that check ahead: as soon as a spare is kept, it watches each of the
/// spare's directories with inotify, and only then checks the stamps (on a thread of low
/// priority, after the job that kept it). From then on any change in the spare (a write, a
/// file opened for writing and closed, a chmod, a name added, removed or renamed) is an event,
/// and a spare with no event since is untouched. A job's ferryd asks the watch about the spare
/// it is about to take, over a Unix socket of this host (abstract, the same user's alone on
/// both ends: SO_PEERCRED); the watch reads every event queued before it answers, and any
/// doubt (no watch, no answer within a moment, an event queue that overflowed) leaves the
/// check to the ferryd, as without a pool.
///
/// What inotify does not tell, and so what a watched spare does not see either: a change made
/// through a hard link to one of its files from outside it, or through a mapping of a file by
/// a process that opened it for writing before the watch began (the job's ranks are gone by
/// the time a spare is kept: only a process that outlived its job could).

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
