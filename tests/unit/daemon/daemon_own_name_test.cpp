// Horovod's gloo binds to the address of the host's own name: ferryd checks that name as
// gloo looks it up before it starts Horovod ranks, and says what is wrong in one line.
#include <gtest/gtest.h>

#include <asio.hpp>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "ferry/daemon/own_name.hpp"

namespace ferry {
namespace {

TEST(OwnName, HorovodGlooRanksAreThoseWithTheRendezvousAndTheGlooController) {
  const std::string addr = "HOROVOD_GLOO_RENDEZVOUS_ADDR=127.0.0.1";
  EXPECT_TRUE(uses_horovod_gloo({addr}));
  EXPECT_TRUE(uses_horovod_gloo({"HOROVOD_CONTROLLER=gloo", addr}));
  EXPECT_TRUE(uses_horovod_gloo({"HOROVOD_CONTROLLER=GLOO", addr}));
  EXPECT_TRUE(uses_horovod_gloo({"HOROVOD_CONTROLLER=", addr}));
  EXPECT_FALSE(uses_horovod_gloo({"HOROVOD_CONTROLLER=mpi", addr}));
  EXPECT_FALSE(uses_horovod_gloo({"HOROVOD_CONTROLLER=gloo", "HOROVOD_RANK=0"}));
  EXPECT_FALSE(uses_horovod_gloo({}));
}

TEST(OwnName, ANameOfThisHostPasses) {
  EXPECT_TRUE(check_own_name("localhost"));
  EXPECT_TRUE(check_own_name("127.0.0.1"));
}

TEST(OwnName, ANameThatDoesNotResolveIsNamedWithTheFileToFix) {
  // .invalid never resolves (RFC 6761).
  const std::string name = "ferry-no-such-host.invalid";
  Status st = check_own_name(name);
  ASSERT_FALSE(st);
  const std::string& m = st.error().message;
  EXPECT_NE(m.find("'" + name + "' does not resolve here"), std::string::npos) << m;
  EXPECT_NE(m.find("Horovod's gloo"), std::string::npos) << m;
  EXPECT_NE(m.find("/etc/hosts on " + name), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

TEST(OwnName, ANameOfAnotherMachineNamesItsAddress) {
  // 203.0.113.0/24 is TEST-NET-3: never an address of this machine.
  Status st = check_own_name("203.0.113.7");
  ASSERT_FALSE(st);
  const std::string& m = st.error().message;
  EXPECT_NE(m.find("'203.0.113.7' resolves here to 203.0.113.7, not an address of this host"),
            std::string::npos)
      << m;
}

// A lookup that returns when the test lets it (a DNS server that does not answer, then does).
struct HeldLookup {
  std::mutex mutex;
  std::condition_variable cv;
  bool released = false;
  bool entered = false;
  std::thread::id thread;

  OwnNameCheck::LookUp function() {
    return [this](const std::string& name) -> Status {
      std::unique_lock lock(mutex);
      entered = true;
      thread = std::this_thread::get_id();
      cv.notify_all();
      cv.wait(lock, [this] { return released; });
      return make_error("no address for " + name);
    };
  }
  void release() {
    std::lock_guard lock(mutex);
    released = true;
    cv.notify_all();
  }
  void wait_entered() {
    std::unique_lock lock(mutex);
    cv.wait(lock, [this] { return entered; });
  }
};

TEST(OwnNameCheck, TheResultComesOnTheLoopAndThenWhatWaitedRuns) {
  asio::io_context io;
  OwnNameCheck check(io);
  std::optional<Status> got;
  std::thread::id result_thread;
  std::vector<std::string> order;
  check.start("localhost", [&](const Status& st) {
    got = st;
    result_thread = std::this_thread::get_id();
    order.emplace_back("result");
  });
  EXPECT_TRUE(check.pending());
  check.then([&] { order.emplace_back("then"); });
  io.run();
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(*got) << got->error().message;
  EXPECT_EQ(result_thread, std::this_thread::get_id());
  EXPECT_FALSE(check.pending());
  EXPECT_EQ(order, (std::vector<std::string>{"result", "then"}));
  // Nothing pending: then() runs in a later turn of the loop.
  bool later = false;
  check.then([&] { later = true; });
  EXPECT_FALSE(later);
  io.restart();
  io.run();
  EXPECT_TRUE(later);
}

TEST(OwnNameCheck, ALookupThatDoesNotReturnHoldsUpOnlyWhatWaitsForIt) {
  asio::io_context io;
  auto held = std::make_shared<HeldLookup>();
  OwnNameCheck check(io, held->function());
  bool result = false, then_ran = false, other_ran = false;
  check.start("fnode3", [&](const Status&) { result = true; });
  check.then([&] { then_ran = true; });
  held->wait_entered();
  EXPECT_NE(held->thread, std::this_thread::get_id());  // not the loop's thread
  asio::post(io, [&] { other_ran = true; });
  io.run_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(other_ran);  // the loop goes on
  EXPECT_FALSE(result);
  EXPECT_FALSE(then_ran);
  EXPECT_TRUE(check.pending());
  held->release();
  io.restart();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!then_ran && std::chrono::steady_clock::now() < deadline)
    io.run_one_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(result);
  EXPECT_TRUE(then_ran);
}

TEST(OwnNameCheck, WithinALimitALookupStillUnderWayIsGivenUp) {
  asio::io_context io;
  auto held = std::make_shared<HeldLookup>();
  OwnNameCheck check(io, held->function());
  bool result = false;
  std::vector<bool> within;
  check.start("fnode3", [&](const Status&) { result = true; });
  check.within(std::chrono::milliseconds(20), [&](bool returned) { within.push_back(returned); });
  check.within(std::chrono::milliseconds(1), [&](bool returned) { within.push_back(!returned); });
  io.run_for(std::chrono::milliseconds(200));
  EXPECT_EQ(within, std::vector<bool>{false});  // once, and said not returned
  EXPECT_FALSE(check.pending());
  // Its thread ends later and hands over nothing.
  held->release();
  io.restart();
  io.run_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(result);

  // A lookup that returns within the limit: f(true) after the result.
  OwnNameCheck quick(io);
  std::vector<std::string> order;
  quick.start("localhost", [&](const Status&) { order.emplace_back("result"); });
  quick.within(std::chrono::seconds(10),
               [&](bool returned) { order.emplace_back(returned ? "returned" : "given up"); });
  io.restart();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (order.size() < 2 && std::chrono::steady_clock::now() < deadline)
    io.run_one_for(std::chrono::milliseconds(10));
  EXPECT_EQ(order, (std::vector<std::string>{"result", "returned"}));
}

TEST(OwnNameCheck, ADroppedOrDestroyedCheckHandsNothingOver) {
  asio::io_context io;
  auto held = std::make_shared<HeldLookup>();
  int results = 0;
  {
    OwnNameCheck check(io, held->function());
    check.start("fnode3", [&](const Status&) { ++results; });
    held->wait_entered();
  }  // destroyed while its thread waits
  held->release();
  // A second start drops the first lookup: only the second one's result comes.
  auto first = std::make_shared<HeldLookup>();
  OwnNameCheck again(io, [first](const std::string& n) { return first->function()(n); });
  std::vector<int> from;
  again.start("a", [&](const Status&) { from.push_back(1); });
  first->wait_entered();
  first->release();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // its result is posted, not run
  again.start("b", [&](const Status&) { from.push_back(2); });
  io.restart();  // the first check's end left the loop without work, which stops it
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (from.empty() && std::chrono::steady_clock::now() < deadline)
    io.run_one_for(std::chrono::milliseconds(10));
  io.run_for(std::chrono::milliseconds(50));
  EXPECT_EQ(results, 0);
  EXPECT_EQ(from, std::vector<int>{2});
}

TEST(OwnNameCheck, AnUnansweredLookupIsSaidWithTheFileToFix) {
  Status st = own_name_unanswered("fnode3", std::chrono::milliseconds(500));
  ASSERT_FALSE(st);
  const std::string& m = st.error().message;
  EXPECT_NE(m.find("looking 'fnode3' up had not returned after 500 ms"), std::string::npos) << m;
  EXPECT_NE(m.find("/etc/hosts on fnode3"), std::string::npos) << m;
  EXPECT_EQ(own_name_unanswered("h", std::chrono::seconds(2)).error().message.find("after 2 s"),
            own_name_unanswered("h", std::chrono::seconds(2)).error().message.find("after "));
}

}  // namespace
}  // namespace ferry
