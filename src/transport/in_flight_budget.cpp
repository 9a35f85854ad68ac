#include "ferry/transport/in_flight_budget.hpp"

namespace ferry {

void InFlightBudget::arrived(std::size_t n) {
  const std::size_t before = total_.fetch_sub(n, std::memory_order_acq_rel);
  if (before >= cap_ / 2 && before - n < cap_ / 2) wake_all();
}

void InFlightBudget::wait(const std::function<void()>& wake) {
  {
    std::lock_guard lock(mu_);
    waiting_.push_back(wake);
    waiters_.store(true, std::memory_order_release);
  }
  // The total may have fallen below half meanwhile, with no arrival left to say so: then
  // the waiters wake now (a second wake later, from arrived(), is harmless).
  if (total_.load(std::memory_order_acquire) < cap_ / 2) wake_all();
}

void InFlightBudget::wake_all() {
  std::vector<std::function<void()>> wake;
  {
    std::lock_guard lock(mu_);
    // Back at half or above by now (producers that went on added since the total fell): the
    // waiters stay, among them any that stopped since at the cap, which waking now would let
    // set out a second batch past it. The bytes on their way arrive, and the total falls
    // below half again: that arrival wakes them.
    if (total_.load(std::memory_order_acquire) >= cap_ / 2) return;
    wake.swap(waiting_);
    waiters_.store(false, std::memory_order_release);
  }
  for (auto& f : wake) f();
}

}  // namespace ferry
