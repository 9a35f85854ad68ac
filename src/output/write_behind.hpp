#pragma once
/// \file
/// Writes one console fd without ever waiting for its reader: what the fd takes at once
/// is written by the caller, the rest by a thread of the fd's own, so that a reader that
/// stops reading (a full pipe, a suspended terminal) holds up that thread only, never the
/// caller's loop.

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ferry/common/posix_handles.hpp"

namespace ferry {

/// Writes what it is given to `fd` in order, each byte once (over partial writes, EINTR and
/// EAGAIN), from a thread of its own. The fd's flags are left alone: it is usually shared
/// with other processes (the shell, a local ferryd), which O_NONBLOCK on it would disturb.
/// After a write error the rest is dropped, now and later.
///
/// The thread is for a reader that is slow or stopped; one that keeps up costs it nothing.
/// While nothing waits for the thread, write() writes on the caller's thread as far as
/// the fd takes bytes without waiting for its reader: all of them for a regular file (it
/// has no reader to wait for), as many as fit for a pipe, FIFO or terminal (through a
/// non-blocking open file description of its own, from /proc/self/fd, so that the shared
/// one keeps its flags) or a socket (MSG_DONTWAIT); the rest waits for the thread. What
/// waits is a chain of chunks of `buffer` bytes, appended to while the thread writes the
/// chunks before: however many batches come meanwhile, the thread wakes once per
/// writev(2), and the chunks go back and forth instead of being allocated anew. Chunks, not
/// one growing buffer: what a stopped reader leaves waiting costs its own size in memory,
/// not the doubling capacity of a string and the copies each doubling makes.
class WriteBehind {
 public:
  /// `wake` runs on the writing thread when a wake_at() threshold is reached; it should
  /// only post to the owner's loop. `buffer`: the bytes of one chunk of what waits.
  WriteBehind(int fd, std::size_t buffer, std::function<void()> wake);
  /// finish()es.
  ~WriteBehind();
  WriteBehind(const WriteBehind&) = delete;
  WriteBehind& operator=(const WriteBehind&) = delete;

  /// Writes [p, p+n) after what waits, now as far as the fd takes it without waiting for
  /// its reader, the rest from the thread; never waits for the reader.
  void write(const char* p, std::size_t n);
  /// Bytes given and not yet written. Cheap: no lock.
  std::size_t queued() const { return queued_.load(std::memory_order_acquire); }
  /// The errno that stopped writing, or 0.
  int error() const { return error_.load(std::memory_order_acquire); }
  /// Calls `wake` once, as soon as at most `bytes` are queued (at once if that is so now).
  void wake_at(std::size_t bytes);
  /// Writes everything queued, then stops the thread (so this blocks while the reader does
  /// not read; for the end of the program) and returns error(). Nothing is written later.
  int finish();

 private:
  // How write() may write on the caller's thread.
  enum class Direct {
    kNo,        // never: every byte goes through the thread
    kAll,       // a regular file or block device: write(2) waits for no reader
    kReopened,  // pipe, FIFO, terminal: through own_fd_, non-blocking
    kSocket,    // send(2) with MSG_DONTWAIT
  };
  static Direct direct_mode(int fd, UniqueFd& own_fd);
  // Whether write() may write now: it may, and nothing waits for the thread.
  bool direct_now() const;
  // Writes what the fd takes without waiting for its reader; returns how many bytes, and
  // sets `err` on a failure.
  std::size_t write_now(const char* p, std::size_t n, int& err);
  void fail(int err);
  void run();

  const int fd_;
  UniqueFd own_fd_;  // kReopened: the same pipe or terminal, O_NONBLOCK
  Direct direct_;
  const std::size_t chunk_;  // the bytes of one chunk
  std::function<void()> wake_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  // Takes [p, p+n) into the chunks of pending_; under mu_.
  void append_locked(const char* p, std::size_t n);

  std::deque<std::string> pending_;     // guarded by mu_, as are the fields below but queued_
  std::vector<std::string> spare_;      // empty chunks (capacity chunk_) kept for reuse
  std::deque<std::string> writing_;     // the thread's: what it writes now, outside the lock
  std::atomic<std::size_t> queued_{0};  // pending_ and writing_; changed under mu_
  std::size_t wake_at_ = 0;
  bool wake_armed_ = false;
  std::atomic<int> error_{0};  // changed under mu_
  bool stopping_ = false;      // changed by the caller's thread only
  std::thread thread_;         // last: started once the fields above exist
};

/// Writes all of [p, p+n) to fd, over partial writes, EINTR and EAGAIN (a non-blocking fd
/// is waited on with poll). Returns 0 or the errno that stopped it.
int write_all(int fd, const char* p, std::size_t n);

/// write_all() for the chunks of `chunks`, in order, with as few writev(2) as they take.
int write_all(int fd, const std::deque<std::string>& chunks);

}  // namespace ferry
