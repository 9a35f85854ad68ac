// InFlightBudget: producers stop at the cap and are woken once the bytes on their way fall
// below half of it; a waiter that registers after the fall is woken at once.
#include "ferry/transport/in_flight_budget.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

namespace ferry {
namespace {

TEST(InFlightBudget, FullAtTheCapWokenBelowHalf) {
  InFlightBudget b(1000);
  EXPECT_FALSE(b.add(600));
  EXPECT_FALSE(b.must_wait());
  EXPECT_TRUE(b.add(400));  // 1000: at the cap
  EXPECT_TRUE(b.must_wait());
  int woken = 0;
  b.wait([&] { ++woken; });
  EXPECT_EQ(woken, 0) << "woken while full";
  b.arrived(400);  // 600: under the cap, not under half
  EXPECT_EQ(woken, 0) << "woken above half";
  b.arrived(200);  // 400: below half
  EXPECT_EQ(woken, 1);
  EXPECT_FALSE(b.must_wait());
  b.add(500);
  b.arrived(500);  // below half again: the waiter was forgotten
  EXPECT_EQ(woken, 1);
}

// While one producer waits for the total to fall below half, another that still has room
// stops too: else the others could keep the total between half and the cap for ever.
TEST(InFlightBudget, WhileOneWaitsTheOthersStopToo) {
  InFlightBudget b(1000);
  ASSERT_TRUE(b.add(1000));
  int a_woken = 0, b_woken = 0;
  b.wait([&] { ++a_woken; });
  b.arrived(300);  // 700: room under the cap, but one waits
  EXPECT_TRUE(b.must_wait());
  EXPECT_TRUE(b.add(100)) << "went on while another waits";
  b.wait([&] { ++b_woken; });
  b.arrived(400);  // 400: below half, both go on
  EXPECT_EQ(a_woken, 1);
  EXPECT_EQ(b_woken, 1);
  EXPECT_FALSE(b.must_wait());
  EXPECT_FALSE(b.add(100));
}

TEST(InFlightBudget, WaiterAfterTheFallIsWokenAtOnce) {
  InFlightBudget b(1000);
  b.add(1000);
  b.arrived(800);  // nobody waits yet
  int woken = 0;
  b.wait([&] { ++woken; });
  EXPECT_EQ(woken, 1);
}

// Producers on threads of their own against one consumer, however the threads interleave:
// every batch arrives, no producer is left waiting, and the bytes on their way never pass
// the cap by more than one batch per producer.
TEST(InFlightBudget, ProducersAndAConsumerNeverLoseAWakeUp) {
  constexpr std::size_t kCap = 4096, kBatch = 512;
  constexpr int kProducers = 4, kBatches = 20000;
  InFlightBudget b(kCap);
  std::atomic<std::size_t> on_way{0}, most{0};
  std::atomic<int> queued{0};
  std::atomic<bool> done{false};
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&] {
      for (int i = 0; i < kBatches; ++i) {
        const std::size_t now = on_way.fetch_add(kBatch) + kBatch;
        std::size_t m = most.load();
        while (now > m && !most.compare_exchange_weak(m, now)) {
        }
        queued.fetch_add(1);
        if (b.add(kBatch)) {
          // The wake may come twice, the second time after this batch: shared, not on the stack.
          auto go = std::make_shared<std::atomic<bool>>(false);
          b.wait([go] { *go = true; });
          while (!*go) std::this_thread::yield();
        }
      }
    });
  }
  std::thread consumer([&] {
    while (!done || queued.load() > 0) {
      if (queued.load() == 0) {
        std::this_thread::yield();
        continue;
      }
      queued.fetch_sub(1);
      on_way.fetch_sub(kBatch);
      b.arrived(kBatch);
    }
  });
  for (auto& t : producers) t.join();
  done = true;
  consumer.join();
  EXPECT_EQ(on_way.load(), 0u);
  EXPECT_FALSE(b.must_wait());
  EXPECT_LE(most.load(), kCap + kProducers * kBatch);
}

}  // namespace
}  // namespace ferry
