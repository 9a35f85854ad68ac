#include "state_collector.hpp"

#include <chrono>
#include <future>

#include "ferry/daemon/host_check.hpp"
#include "ferry/daemon/rank_probe.hpp"
#include "ferry/wire/messages.hpp"

namespace ferry {
namespace {

// How long the CPU of each rank is watched before its stack is read (the debugger stops it).
constexpr auto kCpuSample = std::chrono::milliseconds(1000);
// The most one debugger may take for one rank; they run side by side.
constexpr auto kStackLimit = std::chrono::seconds(45);

wire::StateReport collect_now(uint32_t id, const std::vector<std::pair<int32_t, pid_t>>& ranks) {
  wire::StateReport report;
  report.id = id;
  std::vector<ProcSample> before;
  before.reserve(ranks.size());
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& r : ranks) before.push_back(sample_proc(r.second));
  std::this_thread::sleep_for(kCpuSample);
  const auto elapsed =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  std::vector<std::future<std::string>> stacks;
  for (size_t k = 0; k < ranks.size(); ++k) {
    const ProcSample after = sample_proc(ranks[k].second);
    wire::RankState s;
    s.rank = ranks[k].first;
    s.pid = ranks[k].second;
    s.state = after.ok ? state_name(after.state) : "gone";
    s.cpu_permille = cpu_permille(before[k], after, elapsed);
    s.sample_ms = static_cast<uint32_t>(elapsed.count());
    s.threads = after.threads;
    report.ranks.push_back(s);
    stacks.push_back(std::async(std::launch::async, [pid = ranks[k].second, ok = after.ok] {
      return ok ? dump_stack(pid, kStackLimit) : std::string();
    }));
  }
  for (size_t k = 0; k < stacks.size(); ++k) report.ranks[k].stack = stacks[k].get();
  return report;
}

}  // namespace

StateCollector::StateCollector(asio::io_context& io, std::function<void(const std::string&)> send)
    : io_(io), send_(std::move(send)) {}

StateCollector::~StateCollector() {
  *alive_ = false;
  for (auto& t : threads_) t.join();
}

void StateCollector::collect(uint32_t id, std::vector<std::pair<int32_t, pid_t>> ranks) {
  threads_.emplace_back([this, id, ranks = std::move(ranks), alive = alive_] {
    std::string frame = wire::encode(collect_now(id, ranks));
    asio::post(io_, [this, frame = std::move(frame), alive] {
      if (*alive) send_(frame);
    });
  });
}

void StateCollector::check() {
  threads_.emplace_back([this, alive = alive_] {
    std::string frame = wire::encode(check_this_host());
    asio::post(io_, [this, frame = std::move(frame), alive] {
      if (*alive) send_(frame);
    });
  });
}

}  // namespace ferry
