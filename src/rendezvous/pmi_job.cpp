#include "ferry/rendezvous/pmi_job.hpp"

#include <algorithm>
#include <map>

namespace ferry {

namespace {

std::vector<int> first_hosts(int n) {
  std::vector<int> out(static_cast<std::size_t>(n > 0 ? n : 0));
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int>(i);
  return out;
}

}  // namespace

PmiJob::PmiJob(int hosts, Complete complete) : PmiJob(first_hosts(hosts), std::move(complete)) {}

PmiJob::PmiJob(std::vector<int> hosts, Complete complete)
    : complete_(std::move(complete)),
      hosts_(std::move(hosts)),
      arrived_(hosts_.size(), false),
      puts_(hosts_.size()) {}

Status PmiJob::host_barrier(int host, uint32_t epoch, std::vector<PmiKv> puts) {
  const auto at = std::find(hosts_.begin(), hosts_.end(), host);
  if (at == hosts_.end())
    return make_error("PMI barrier from unknown host " + std::to_string(host));
  const auto slot = static_cast<std::size_t>(at - hosts_.begin());
  if (epoch != epoch_)
    return make_error("PMI barrier " + std::to_string(epoch) + " reported while barrier " +
                      std::to_string(epoch_) + " is being gathered");
  if (arrived_[slot])
    return make_error("PMI barrier " + std::to_string(epoch) + " reported twice by one host");
  arrived_[slot] = true;
  puts_[slot] = std::move(puts);
  if (++count_ < static_cast<int>(arrived_.size())) return {};

  // Merge in host order; a key put on two hosts keeps the later host's value (PMI leaves
  // this undefined; MPICH never does it) at the position of its first appearance.
  std::vector<PmiKv> merged;
  std::map<std::string, std::size_t, std::less<>> index;
  for (auto& host_puts : puts_)
    for (auto& kv : host_puts) {
      auto [it, fresh] = index.try_emplace(kv.key, merged.size());
      if (fresh)
        merged.push_back(std::move(kv));
      else
        merged[it->second].value = std::move(kv.value);
    }
  const uint32_t done = epoch_;
  ++epoch_;
  count_ = 0;
  arrived_.assign(arrived_.size(), false);
  for (auto& p : puts_) p.clear();
  if (complete_) complete_(done, merged);
  return {};
}

std::vector<int> PmiJob::missing_hosts() const {
  std::vector<int> out;
  for (std::size_t i = 0; i < arrived_.size(); ++i)
    if (!arrived_[i]) out.push_back(hosts_[i]);
  return out;
}

std::string pmi_process_mapping(const std::vector<int>& node_of_rank) {
  // Runs of consecutive ranks on one node: (node, length).
  std::vector<std::pair<int, int>> runs;
  for (int node : node_of_rank) {
    if (!runs.empty() && runs.back().first == node)
      ++runs.back().second;
    else
      runs.emplace_back(node, 1);
  }
  std::string out = "(vector";
  for (std::size_t i = 0; i < runs.size();) {
    // Extend a block over following nodes start+1, start+2, ... with the same run length.
    std::size_t j = i + 1;
    while (j < runs.size() && runs[j].first == runs[j - 1].first + 1 &&
           runs[j].second == runs[i].second)
      ++j;
    out += ",(" + std::to_string(runs[i].first) + "," + std::to_string(j - i) + "," +
           std::to_string(runs[i].second) + ")";
    i = j;
  }
  out += ")";
  return out;
}

PmiHostConfig pmi_host_config(const Placement& placement, std::size_t host_index,
                              const std::string& kvsname) {
  std::vector<int> node_of_rank(static_cast<std::size_t>(placement.world_size), 0);
  for (std::size_t h = 0; h < placement.hosts.size(); ++h)
    for (const auto& r : placement.hosts[h].ranks)
      if (r.rank >= 0 && r.rank < placement.world_size) node_of_rank[r.rank] = static_cast<int>(h);
  PmiHostConfig c;
  c.kvsname = kvsname.empty() ? "ferry" : kvsname;
  c.world_size = placement.world_size;
  c.universe_size = placement.world_size;
  c.process_mapping = pmi_process_mapping(node_of_rank);
  if (host_index < placement.hosts.size())
    for (const auto& r : placement.hosts[host_index].ranks) {
      c.ranks.push_back(r.rank);
      c.appnums.push_back(r.app);
    }
  return c;
}

}  // namespace ferry
