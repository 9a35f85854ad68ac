// call_within: a call that returns is joined and reported; one that never returns is left
// running after the limit, and the caller goes on.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>

#include "ferry/common/bounded_call.hpp"

namespace ferry {
namespace {

using Clock = std::chrono::steady_clock;

TEST(BoundedCall, ACallThatReturnsIsWaitedForAndReported) {
  std::atomic<bool> ran{false};
  EXPECT_TRUE(call_within([&ran] { ran = true; }, std::chrono::seconds(10)));
  EXPECT_TRUE(ran);
}

TEST(BoundedCall, ACallThatNeverReturnsIsLeftAfterTheLimit) {
  // Blocks until the test lets it go: "never" for call_within, and no thread left at the
  // test's end.
  auto release = std::make_shared<std::promise<void>>();
  std::shared_future<void> released = release->get_future().share();
  auto entered = std::make_shared<std::atomic<bool>>(false);
  const auto start = Clock::now();
  EXPECT_FALSE(call_within(
      [released, entered] {
        *entered = true;
        released.wait();
      },
      std::chrono::milliseconds(200)));
  const auto took = Clock::now() - start;
  EXPECT_GE(took, std::chrono::milliseconds(200));
  EXPECT_LT(took, std::chrono::seconds(5));
  EXPECT_TRUE(*entered);
  release->set_value();
}

}  // namespace
}  // namespace ferry
