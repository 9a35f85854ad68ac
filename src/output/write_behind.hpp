#pragma once
/// \file
/// Writes one console fd from a thread of its own, so that a reader that stops reading (a
/// full pipe, a suspended terminal) holds up that thread only, never the caller's loop.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace ferry {

/// Writes queued chunks to `fd` in order, each whole (over partial writes, EINTR and
/// EAGAIN). The fd's flags are left alone: it is usually shared with other processes (the
/// shell, a local ferryd), which O_NONBLOCK on it would disturb. After a write error the
/// rest is dropped, now and later.
class WriteBehind {
 public:
  /// `wake` runs on the writing thread when a wake_at() threshold is reached; it should
  /// only post to the owner's loop.
  WriteBehind(int fd, std::function<void()> wake);
  /// finish()es.
  ~WriteBehind();
  WriteBehind(const WriteBehind&) = delete;
  WriteBehind& operator=(const WriteBehind&) = delete;

  /// Queues `chunk`; never blocks.
  void push(std::string chunk);
  /// Bytes pushed and not yet written (the chunk being written included).
  std::size_t queued() const;
  /// The errno that stopped writing, or 0.
  int error() const;
  /// Calls `wake` once, as soon as at most `bytes` are queued (at once if that is so now).
  void wake_at(std::size_t bytes);
  /// Writes everything queued, then stops the thread (so this blocks while the reader does
  /// not read; for the end of the program) and returns error(). Nothing is written later.
  int finish();

 private:
  void run();

  const int fd_;
  std::function<void()> wake_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> chunks_;  // guarded by mu_, as are the fields below
  std::size_t queued_ = 0;
  std::size_t wake_at_ = 0;
  bool wake_armed_ = false;
  int error_ = 0;
  bool stopping_ = false;
  std::thread thread_;  // last: started once the fields above exist
};

/// Writes all of [p, p+n) to fd, over partial writes, EINTR and EAGAIN (a non-blocking fd
/// is waited on with poll). Returns 0 or the errno that stopped it.
int write_all(int fd, const char* p, std::size_t n);

}  // namespace ferry
