#pragma once
/// \file
/// A budget of bytes on their way between threads, shared by several producers: what lets
/// the SSH sessions on I/O threads bound, all hosts together, the output they have read and
/// the front end's loop has not yet taken (see SshLink).

#include <atomic>
#include <cstddef>
#include <functional>
#include <mutex>
#include <vector>

namespace ferry {

/// Bytes on their way from several producers (the sessions' threads, with ferryd's output)
/// to one consumer (the loop), all producers together. Past `cap` a producer that sets out
/// more stops, and waits until they fall below half of it; while one waits, every other
/// producer stops too at its next batch, so that those who still had room cannot keep the
/// total between half and the cap and starve the waiter. Thread-safe.
class InFlightBudget {
 public:
  explicit InFlightBudget(std::size_t cap) : cap_(cap) {}
  /// On a producer's thread: `n` bytes set out; true when the producer must stop and
  /// wait(): the total reached the cap, or others wait.
  bool add(std::size_t n) {
    return total_.fetch_add(n, std::memory_order_acq_rel) + n >= cap_ || must_wait();
  }
  /// On the consumer's thread: `n` bytes arrived. When that took the total below half the
  /// cap, and it is still below half, every waiter is called (and forgotten).
  void arrived(std::size_t n);
  /// On a producer's thread: `wake` is called once the total is below half the cap: at once
  /// (on this thread, with every other waiter) when it is so now, and then maybe once more.
  /// `wake` must only post, and take a second call as a no-op.
  void wait(const std::function<void()>& wake);
  /// Whether a producer that may go on should wait() instead: the total is at the cap, or
  /// others wait.
  bool must_wait() const {
    return total_.load(std::memory_order_acquire) >= cap_ ||
           waiters_.load(std::memory_order_acquire);
  }

 private:
  void wake_all();

  const std::size_t cap_;
  std::atomic<std::size_t> total_{0};
  std::atomic<bool> waiters_{false};  // waiting_ is not empty
  std::mutex mu_;
  std::vector<std::function<void()>> waiting_;
};

}  // namespace ferry
