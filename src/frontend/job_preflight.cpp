// The data network's preflight, before the first attempt's ranks start: rank 0's ferryd listens
// at MASTER_ADDR:MASTER_PORT, every other ferryd connects there; then every ferryd listens on
// its host's own address on the chosen interface, where the ranks listen for each other (gloo,
// NCCL, MPI), and connects to the next host's. A host that cannot fails the launch in one line
// (preflight_report.cpp) instead of hanging until the framework's timeout.
#include <algorithm>
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
    return preflight_done();
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
  arm_preflight_timer();
}

// A host still receiving its tree answers once its copy is in place (its silence while it
// receives is the sync's to judge): the limit counts from then.
void Job::Impl::arm_preflight_timer() {
  preflight_timer_.expires_after(kPreflightLimit);
  preflight_timer_.async_wait([this](std::error_code ec) {
    if (ec || !preflight_ || phase_ == Phase::kFinishing) return;
    for (size_t m : preflight_->waiting)
      if (hosts_[m]->sync) return arm_preflight_timer();
    preflight_over();
  });
}

// The second round, for the traffic between the ranks rather than to rank 0: each host's own
// address on the chosen interface (gloo, NCCL and MPI listen there). Every host listens on a
// free port of it, then connects to the next host's: a ring tries every address from another
// host in two round trips, whatever the number of hosts.
void Job::Impl::start_peer_preflight() {
  const NicChoice& c = rdv_->choice();
  const size_t n = attempt_.members.size();
  auto unusable = [](const std::string& a) {
    std::error_code ec;
    const auto addr = asio::ip::make_address(a, ec);
    return ec || addr.is_loopback();
  };
  if (!c.chosen || c.address.size() != n ||
      std::any_of(c.address.begin(), c.address.end(), unusable))
    return preflight_done();  // one machine, or no address known per host: nothing to try
  for (const std::string& kv : opts_.exports)
    if (kv.starts_with("GLOO_SOCKET_IFNAME=") || kv.starts_with("NCCL_SOCKET_IFNAME=")) {
      diag_.verbose(
          "preflight: the hosts' own addresses are not tried (the interface is the user's: " + kv +
          ")");
      return preflight_done();
    }
  PendingPreflight& p = preflight_.emplace();
  p.peers = true;
  p.listening = true;
  p.rank0 = attempt_.members.front();
  p.peer_address = c.address;
  p.peer_interface = c.iface;
  p.peer_port.assign(n, 0);
  p.began = Clock::now();
  for (size_t j = 0; j < n; ++j) {
    p.waiting.insert(attempt_.members[j]);
    hosts_[attempt_.members[j]]->link->send(
        wire::encode(wire::Preflight{true, c.address[j], 0, 0}));
  }
  arm_preflight_timer();
}

void Job::Impl::on_preflight_result(size_t i, const wire::PreflightResult& r) {
  if (phase_ == Phase::kFinishing) return;  // a sync failed meanwhile
  if (!preflight_ || !preflight_->waiting.contains(i))
    return on_broken(i, "unasked preflight result");
  PendingPreflight& p = *preflight_;
  p.waiting.erase(i);
  p.results[i] = r;
  if (p.listening && p.peers) {
    if (!p.waiting.empty()) return;
    for (const auto& [host, result] : p.results)
      if (!result.error.empty()) return preflight_over();
    // Every host listens: each connects to the next one's address.
    p.listening = false;
    const size_t n = attempt_.members.size();
    for (size_t j = 0; j < n; ++j) p.peer_port[j] = p.results[attempt_.members[j]].port;
    p.results.clear();
    for (size_t j = 0; j < n; ++j) {
      const size_t next = (j + 1) % n;
      p.waiting.insert(attempt_.members[j]);
      hosts_[attempt_.members[j]]->link->send(wire::encode(
          wire::Preflight{false, p.peer_address[next], p.peer_port[next], kConnectTimeoutMs}));
    }
    return;
  }
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

// What went wrong for the member at `j` in the round `p` (its answer, or none).
PreflightFailure Job::Impl::preflight_failure(size_t j, const PendingPreflight& p) const {
  const size_t m = attempt_.members[j];
  PreflightFailure f;
  f.host = hosts_[m]->name();
  if (p.peers) {
    const size_t t = p.listening ? j : (j + 1) % attempt_.members.size();
    f.peer = true;
    f.listening = p.listening;
    f.target = hosts_[attempt_.members[t]]->name();
    f.target_interface = p.peer_interface[t];
    f.address = p.peer_address[t];
    f.port = p.listening ? 0 : p.peer_port[t];
  } else {
    f.listening = m == p.rank0;
    f.target = hosts_[p.rank0]->name();
    f.target_interface = p.target_interface;
    f.address = p.address;
    f.port = p.port;
  }
  auto it = p.results.find(m);
  if (it == p.results.end()) {
    f.error = "its ferryd gave no preflight answer within " +
              std::to_string(kPreflightLimit.count()) + " s";
  } else {
    f.host_interface = it->second.interface;
    f.error = it->second.error;
    f.reason = it->second.reason;
  }
  return f;
}

// Every answer of a round is in (or the time is up): the next round, the ranks start, or the
// launch fails with one line per host that could not reach where it had to.
void Job::Impl::preflight_over() {
  preflight_timer_.cancel();
  PendingPreflight p = std::move(*preflight_);
  preflight_.reset();
  size_t failed = 0;
  for (size_t j = 0; j < attempt_.members.size(); ++j) {
    const size_t m = attempt_.members[j];
    auto it = p.results.find(m);
    preflight_outcome_[m] = "ok";
    if (it == p.results.end() && !p.waiting.contains(m)) {  // not asked: rank 0's could not listen
      preflight_outcome_[m] = "not tried";
      continue;
    }
    if (it != p.results.end() && it->second.error.empty()) continue;
    diag_.error(preflight_failure_line(preflight_failure(j, p)));
    preflight_outcome_[m] = "failed";
    ++failed;
  }
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - p.began);
  if (failed == 0 && !p.peers) {
    diag_.verbose("preflight: every host reached " + hosts_[p.rank0]->name() + " at " + p.address +
                  ":" + std::to_string(p.port) + " (" + std::to_string(took.count()) + " ms)");
    return start_peer_preflight();
  }
  if (failed == 0) {
    diag_.verbose(
        "preflight: every host reached the next one's own address on the chosen "
        "interface (a ring of " +
        std::to_string(attempt_.members.size()) + " hosts, " + std::to_string(took.count()) +
        " ms)");
    return preflight_done();
  }
  if (opts_.check) return start_check();
  diag_.error("the job did not start (" + std::to_string(failed) + " of " +
              std::to_string(attempt_.members.size()) + " hosts failed the preflight)");
  attempt_.end.start_failed();
  finish_job();
}

}  // namespace ferry
