// The data network's preflight, before the first attempt's ranks start: rank 0's ferryd listens
// at MASTER_ADDR:MASTER_PORT, every other ferryd connects there. A host that cannot fails the
// launch in one line (preflight_report.cpp) instead of hanging until the framework's timeout.
#include <chrono>
#include <cstdlib>

#include "ferry/frontend/preflight_report.hpp"
#include "job_impl.hpp"

namespace ferry {
namespace {

// How long a host may take to connect: a dropped packet's first retry comes after 1 s, the
// second after 3 s.
constexpr uint32_t kConnectTimeoutMs = 3000;
// The whole preflight's limit (a ferryd that never answers).
constexpr auto kPreflightLimit = std::chrono::seconds(10);

}  // namespace

// Worth it when ranks on more than one host meet at rank 0's address: not for a job on one
// host, nor in horovodrun's elastic mode (its world changes as it goes).
bool Job::Impl::want_preflight() const {
  return opts_.preflight && !opts_.elastic.on() && attempt_.members.size() > 1;
}

void Job::Impl::start_preflight() {
  auto [address, port] = master_endpoint();
  // The user's own MASTER_ADDR / MASTER_PORT (-x) are where the ranks will meet.
  for (const std::string& kv : opts_.exports) {
    if (kv.starts_with("MASTER_ADDR=")) address = kv.substr(12);
    if (kv.starts_with("MASTER_PORT=")) port = static_cast<uint16_t>(std::atoi(kv.c_str() + 12));
  }
  std::error_code ec;
  asio::ip::make_address(address, ec);
  if (ec || port == 0) {
    diag_.verbose("preflight skipped: MASTER_ADDR " + address + " is not an IP address");
    return send_specs();
  }
  preflight_.emplace();
  PendingPreflight& p = *preflight_;
  p.rank0 = attempt_.members.front();
  p.address = address;
  p.port = port;
  p.listening = true;
  p.began = Clock::now();
  p.waiting = {p.rank0};
  hosts_[p.rank0]->link->send(wire::encode(wire::Preflight{true, p.address, p.port, 0}));
  preflight_timer_.expires_after(kPreflightLimit);
  preflight_timer_.async_wait([this](std::error_code ec) {
    if (!ec && preflight_) preflight_over();
  });
}

void Job::Impl::on_preflight_result(size_t i, const wire::PreflightResult& r) {
  if (!preflight_ || !preflight_->waiting.contains(i))
    return on_broken(i, "unasked preflight result");
  PendingPreflight& p = *preflight_;
  p.waiting.erase(i);
  p.results[i] = r;
  if (p.listening) {
    p.listening = false;
    p.target_interface = r.interface;
    if (!r.error.empty()) return preflight_over();
    for (size_t m : attempt_.members) {
      if (m == p.rank0) continue;
      hosts_[m]->link->send(
          wire::encode(wire::Preflight{false, p.address, p.port, kConnectTimeoutMs}));
      p.waiting.insert(m);
    }
  }
  if (p.waiting.empty()) preflight_over();
}

// Every answer is in (or the time is up): the ranks start, or the launch fails with one line per
// host that could not reach rank 0's.
void Job::Impl::preflight_over() {
  preflight_timer_.cancel();
  PendingPreflight p = std::move(*preflight_);
  preflight_.reset();
  const std::string target = hosts_[p.rank0]->name();
  size_t failed = 0;
  for (size_t m : attempt_.members) {
    PreflightFailure f{
        m == p.rank0, hosts_[m]->name(), "", target, p.target_interface, p.address, p.port, "", ""};
    auto it = p.results.find(m);
    preflight_outcome_[m] = "ok";
    if (it == p.results.end()) {
      if (!p.waiting.contains(m)) {  // not asked: rank 0's host could not listen
        preflight_outcome_[m] = "not tried";
        continue;
      }
      f.error = "its ferryd gave no preflight answer within " +
                std::to_string(kPreflightLimit.count()) + " s";
    } else if (it->second.error.empty()) {
      continue;
    } else {
      f.host_interface = it->second.interface;
      f.error = it->second.error;
      f.reason = it->second.reason;
    }
    diag_.error(preflight_failure_line(f));
    preflight_outcome_[m] = "failed";
    ++failed;
  }
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - p.began);
  if (failed == 0) {
    diag_.verbose("preflight: every host reached " + target + " at " + p.address + ":" +
                  std::to_string(p.port) + " (" + std::to_string(took.count()) + " ms)");
    return send_specs();
  }
  if (opts_.check) return start_check();
  diag_.error("the job did not start (" + std::to_string(failed) + " of " +
              std::to_string(attempt_.members.size()) + " hosts failed the preflight)");
  attempt_.end.start_failed();
  finish_job();
}

}  // namespace ferry
