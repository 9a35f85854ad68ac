#include "ferry/rendezvous/elastic_rounds.hpp"

#include <algorithm>
#include <map>
#include <random>

#include "ferry/common/text.hpp"

namespace ferry {

std::string ElasticAssignment::response() const {
  return std::to_string(rank) + "," + std::to_string(size) + "," + std::to_string(local_rank) +
         "," + std::to_string(local_size) + "," + std::to_string(cross_rank) + "," +
         std::to_string(cross_size);
}

Result<std::vector<DiscoveredHost>> parse_discovered_hosts(const std::string& output,
                                                           int default_slots) {
  std::vector<DiscoveredHost> hosts;
  int line_no = 0;
  for (const auto& raw : split(output, '\n')) {
    ++line_no;
    std::string line(trim(raw));
    if (line.empty()) continue;
    DiscoveredHost h{line, default_slots};
    if (auto colon = line.rfind(':'); colon != std::string::npos) {
      h.name = line.substr(0, colon);
      const std::string n = line.substr(colon + 1);
      int slots = 0;
      bool digits = !n.empty() && n.size() <= 6 &&
                    std::all_of(n.begin(), n.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (digits) slots = std::stoi(n);
      if (!digits || slots <= 0 || h.name.empty())
        return make_error("line " + std::to_string(line_no) + ": '" + line +
                          "' is not 'host' or 'host:slots'");
      h.slots = slots;
    }
    auto same = [&](const DiscoveredHost& o) { return o.name == h.name; };
    if (auto it = std::find_if(hosts.begin(), hosts.end(), same); it != hosts.end())
      it->slots = h.slots;
    else
      hosts.push_back(std::move(h));
  }
  return hosts;
}

std::vector<ElasticAssignment> elastic_assignments(const std::vector<DiscoveredHost>& hosts,
                                                   int max_np) {
  std::vector<ElasticAssignment> out;
  std::map<int, int> cross_size;                 // local rank -> hosts that have it
  std::vector<std::pair<size_t, size_t>> spans;  // [first, end) of each host in `out`
  for (const auto& h : hosts) {
    const size_t first = out.size();
    for (int lr = 0; lr < h.slots; ++lr) {
      if (max_np > 0 && static_cast<int>(out.size()) == max_np) break;
      ElasticAssignment a;
      a.host = h.name;
      a.rank = static_cast<int>(out.size());
      a.local_rank = lr;
      a.cross_rank = cross_size[lr]++;
      out.push_back(std::move(a));
    }
    spans.emplace_back(first, out.size());
  }
  for (auto [first, end] : spans)
    for (size_t i = first; i < end; ++i) {
      out[i].size = static_cast<int>(out.size());
      out[i].local_size = static_cast<int>(end - first);
      out[i].cross_size = cross_size[out[i].local_rank];
    }
  return out;
}

ElasticRounds::HostState& ElasticRounds::state(const std::string& host) {
  for (auto& [name, s] : states_)
    if (name == host) return s;
  states_.emplace_back(host, HostState{});
  return states_.back().second;
}

const ElasticRounds::HostState* ElasticRounds::find_state(const std::string& host) const {
  for (const auto& [name, s] : states_)
    if (name == host) return &s;
  return nullptr;
}

bool ElasticRounds::blacklisted(const std::string& host) const {
  const HostState* s = find_state(host);
  return s && s->blacklisted;
}

bool ElasticRounds::cooldown_over(const std::string& host, double now_s) const {
  const HostState* s = find_state(host);
  return s && s->cooldown_end > 0 && s->cooldown_end <= now_s;
}

int ElasticRounds::update_hosts(const std::vector<DiscoveredHost>& hosts, double now_s) {
  bool any_back = false;
  for (const auto& h : hosts) any_back |= cooldown_over(h.name, now_s);
  if (hosts == discovered_ && !any_back) return kNoUpdate;
  auto find = [](const std::vector<DiscoveredHost>& list, const std::string& name) {
    return std::find_if(list.begin(), list.end(),
                        [&](const DiscoveredHost& d) { return d.name == name; });
  };
  int res = kNoUpdate;
  for (const auto& p : discovered_)
    if (find(hosts, p.name) == hosts.end()) res |= kHostsRemoved;
  for (const auto& h : hosts) {
    auto p = find(discovered_, h.name);
    if (p == discovered_.end() || h.slots > p->slots || cooldown_over(h.name, now_s))
      res |= kHostsAdded;
    else if (h.slots < p->slots)
      res |= kHostsRemoved;
  }
  // Oldest first: hosts already in the order keep their place, new ones go last. A blacklisted
  // host left the order; back from its cooldown, it is a new one (horovod's HostManager).
  std::vector<std::string> order;
  for (const auto& name : order_)
    if (find(hosts, name) != hosts.end()) order.push_back(name);
  for (const auto& h : hosts) {
    const bool out = blacklisted(h.name) && !cooldown_over(h.name, now_s);
    if (!out && std::find(order.begin(), order.end(), h.name) == order.end())
      order.push_back(h.name);
  }
  for (const auto& h : hosts)
    if (cooldown_over(h.name, now_s)) state(h.name) = HostState{false, state(h.name).times, 0};
  order_ = std::move(order);
  discovered_ = hosts;
  return res;
}

int ElasticRounds::available_slots() const {
  int n = 0;
  for (const auto& h : discovered_)
    if (!blacklisted(h.name)) n += h.slots;
  return n;
}

std::vector<ElasticAssignment> ElasticRounds::next_world() const {
  std::vector<DiscoveredHost> hosts;
  for (const auto& name : order_) {
    if (blacklisted(name)) continue;
    for (const auto& d : discovered_)
      if (d.name == name) hosts.push_back(d);
  }
  return elastic_assignments(hosts, limits_.max_np);
}

bool ElasticRounds::would_reassign() const {
  auto next = next_world();
  if (static_cast<int>(next.size()) < limits_.min_np) return true;  // horovod: an empty world
  if (next.size() != world_.size()) return true;
  for (size_t i = 0; i < next.size(); ++i)
    if (next[i].response() != world_[i].response() || next[i].host != world_[i].host) return true;
  return false;
}

Result<std::vector<ElasticAssignment>> ElasticRounds::assign() {
  auto next = next_world();
  if (static_cast<int>(next.size()) < limits_.min_np)
    return make_error(std::to_string(next.size()) + " slots available, " +
                      std::to_string(limits_.min_np) + " needed (--min-np)");
  if (!world_.empty()) {
    bool kept = false;
    for (const auto& a : next)
      for (const auto& w : world_) kept |= a.host == w.host;
    if (!kept) return make_error("no host of the previous workers is left to hand the state over");
  }
  world_ = std::move(next);
  recorded_.clear();
  return world_;
}

std::optional<ElasticAssignment> ElasticRounds::assignment(const ElasticSlot& slot) const {
  if (blacklisted(slot.host)) return std::nullopt;
  for (const auto& a : world_)
    if (a.host == slot.host && a.local_rank == slot.local_rank) return a;
  return std::nullopt;
}

bool ElasticRounds::record(const ElasticSlot& slot, WorkerState st) {
  if (!assignment(slot)) return false;
  auto it = std::find_if(recorded_.begin(), recorded_.end(),
                         [&](const auto& r) { return r.first == slot; });
  if (it == recorded_.end())
    recorded_.emplace_back(slot, st);
  else if (st == WorkerState::kFailure)
    it->second = st;
  else
    return false;
  return recorded_.size() == world_.size();
}

int ElasticRounds::count(WorkerState s) const {
  return static_cast<int>(std::count_if(recorded_.begin(), recorded_.end(),
                                        [&](const auto& r) { return r.second == s; }));
}

RoundEnd ElasticRounds::end_round(double now_s) {
  newly_blacklisted_.clear();
  if (count(WorkerState::kSuccess) > 0) return RoundEnd::kSucceeded;
  if (count(WorkerState::kFailure) == static_cast<int>(world_.size())) return RoundEnd::kAllFailed;
  for (const auto& [slot, st] : recorded_) {
    if (st != WorkerState::kFailure) continue;
    HostState& s = state(slot.host);
    if (!s.blacklisted) newly_blacklisted_.push_back(slot.host);
    s.blacklisted = true;
    std::erase(order_, slot.host);
    // A cooldown, when a range was given: low * 2^times plus jitter, within [low, high].
    if (limits_.cooldown_low_s > 0 && s.cooldown_end <= now_s) {
      static std::minstd_rand jitter{std::random_device{}()};
      ++s.times;
      const double low = limits_.cooldown_low_s;
      double delay = low * static_cast<double>(1 << std::min(s.times, 20)) +
                     std::uniform_real_distribution<double>(0, 1)(jitter) * low;
      delay = std::max(low, std::min<double>(limits_.cooldown_high_s, delay));
      s.cooldown_end = now_s + delay;
    }
  }
  bool all_out = true;
  for (const auto& [slot, st] : recorded_) all_out &= blacklisted(slot.host);
  if (all_out) return RoundEnd::kAllBlacklisted;
  if (limits_.reset_limit >= 0 && resets_ >= limits_.reset_limit) return RoundEnd::kResetLimit;
  ++resets_;
  return RoundEnd::kResume;
}

}  // namespace ferry
