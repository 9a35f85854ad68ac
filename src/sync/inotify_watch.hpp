#pragma once
// Inside the sync part: what the pool's two watches share (tree_watch.cpp over a --sync tree,
// spare_watch.cpp over a host's spares): what counts as a change in a watched directory or
// file, the
// reading of every event queued so far, and the short hash that names a path.

#include <sys/inotify.h>
#include <unistd.h>

#include <cstdint>
#include <string_view>

namespace ferry::sync_detail {

// Every change to a directory's names or to an entry in it, and a file opened for writing
// and closed (whether or not it was written: a write through a mapping tells nothing else).
inline constexpr uint32_t kWatchedChanges =
    IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF |
    IN_MOVED_FROM | IN_MOVED_TO | IN_DONT_FOLLOW | IN_ONLYDIR;

// Every change to a watched regular file, by whatever name it was reached: a write, a chmod,
// a link added or removed (its change of link count), a file opened for writing and closed
// (also when the last mapping of it ends), its removal. A directory's watch sees changes made
// through its own names only; a file's own watch also sees those made through a hard link
// to it from elsewhere.
inline constexpr uint32_t kWatchedFileChanges =
    IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF | IN_DONT_FOLLOW;

// Calls `on(event)` for every event queued on the non-blocking inotify descriptor `fd` so
// far: any change that ended before the call is among them.
template <typename On>
void read_inotify_events(int fd, On&& on) {
  alignas(inotify_event) char buf[16384];
  for (;;) {
    const ssize_t got = ::read(fd, buf, sizeof buf);
    if (got <= 0) return;  // EAGAIN: every event queued so far is read
    for (ssize_t at = 0; at < got;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buf + at);
      at += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
      on(*ev);
    }
  }
}

// FNV-1a of `text`: a path made short enough to name a socket or a file by.
inline uint64_t fnv1a(std::string_view text) {
  uint64_t h = 14695981039346656037ULL;
  for (const unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace ferry::sync_detail
