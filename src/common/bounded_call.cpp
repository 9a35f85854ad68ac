#include "ferry/common/bounded_call.hpp"

#include <future>
#include <memory>
#include <thread>
#include <utility>

namespace ferry {

bool call_within(std::function<void()> f, std::chrono::milliseconds limit) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> returned = done->get_future();
  std::thread t([f = std::move(f), done] {
    f();
    done->set_value();
  });
  if (returned.wait_for(limit) == std::future_status::ready) {
    t.join();
    return true;
  }
  t.detach();
  return false;
}

}  // namespace ferry
