#include "ferry/rendezvous/pmix_job.hpp"

#include <algorithm>

namespace ferry {
namespace {

std::string join(const std::vector<std::string>& parts, char sep) {
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) out += sep;
    out += p;
  }
  return out;
}

}  // namespace

std::vector<std::string> pmix_node_names(std::vector<std::string> hostnames) {
  std::map<std::string, int> seen;
  for (auto& n : hostnames) {
    const int k = ++seen[n];
    if (k > 1) n += "#" + std::to_string(k);
  }
  return hostnames;
}

std::string pmix_nspace_name(const std::string& job_id, uint32_t attempt) {
  std::string name =
      "ferry." + (job_id.empty() ? std::string("job") : job_id) + "." + std::to_string(attempt);
  if (name.size() > 255) name.erase(0, name.size() - 255);
  return name;
}

Result<PmixNamespace> make_pmix_namespace(const std::string& nspace,
                                          const std::vector<uint32_t>& node_of_rank,
                                          std::vector<std::string> nodes, uint32_t node,
                                          bool may_have_none) {
  if (node >= nodes.size())
    return make_error("PMIx: host index " + std::to_string(node) + " of " +
                      std::to_string(nodes.size()) + " hosts");
  PmixNamespace ns;
  ns.nspace = nspace;
  ns.job_size = static_cast<uint32_t>(node_of_rank.size());
  ns.nodes = pmix_node_names(std::move(nodes));
  ns.node = node;
  std::vector<std::vector<std::string>> ranks_of(ns.nodes.size());
  for (size_t r = 0; r < node_of_rank.size(); ++r) {
    const uint32_t n = node_of_rank[r];
    if (n >= ns.nodes.size())
      return make_error("PMIx: rank " + std::to_string(r) + " is placed on host index " +
                        std::to_string(n) + " of " + std::to_string(ns.nodes.size()));
    ns.procs.push_back({static_cast<int>(r), n,
                        static_cast<uint16_t>(std::min<size_t>(ranks_of[n].size(), 65535))});
    ranks_of[n].push_back(std::to_string(r));
    if (n == node) ns.local_ranks.push_back(static_cast<int>(r));
  }
  if (ns.local_ranks.empty() && !may_have_none) return make_error("PMIx: no rank on this host");
  ns.local_peers = join(ranks_of[node], ',');
  ns.node_map = join(ns.nodes, ',');
  std::vector<std::string> per_node;
  per_node.reserve(ranks_of.size());
  for (const auto& rs : ranks_of) per_node.push_back(join(rs, ','));
  ns.proc_map = join(per_node, ';');
  return ns;
}

Result<PmixNamespace> make_spawned_namespace(const std::string& nspace,
                                             const std::vector<uint32_t>& node_of_rank,
                                             const std::vector<std::string>& nodes, uint32_t node) {
  // The hosts used, in host order, and each rank's index among them.
  std::vector<uint32_t> used;
  for (uint32_t n : node_of_rank) {
    if (n >= nodes.size())
      return make_error("PMIx: a spawned process is placed on host index " + std::to_string(n) +
                        " of " + std::to_string(nodes.size()));
    if (std::find(used.begin(), used.end(), n) == used.end()) used.push_back(n);
  }
  std::sort(used.begin(), used.end());
  auto index_of = [&](uint32_t n) {
    return static_cast<uint32_t>(std::find(used.begin(), used.end(), n) - used.begin());
  };
  std::vector<uint32_t> compact;
  compact.reserve(node_of_rank.size());
  for (uint32_t n : node_of_rank) compact.push_back(index_of(n));
  // Named as in the attempt's namespace ("#2" suffixes over every host), then picked.
  const std::vector<std::string> all = pmix_node_names(nodes);
  std::vector<std::string> names;
  names.reserve(used.size() + 1);
  for (uint32_t n : used) names.push_back(all[n]);
  const bool here = std::find(used.begin(), used.end(), node) != used.end();
  if (!here) {
    // No process here: a node index past the list, so that none is local.
    names.push_back(node < all.size() ? all[node] : "");
    auto ns = make_pmix_namespace(nspace, compact, names, static_cast<uint32_t>(used.size()), true);
    if (!ns) return ns;
    ns->nodes.pop_back();
    ns->node_map = join(ns->nodes, ',');
    std::string proc_map = ns->proc_map;
    ns->proc_map = proc_map.substr(0, proc_map.rfind(';'));
    return ns;
  }
  return make_pmix_namespace(nspace, compact, names, index_of(node));
}

Status set_pmix_apps(PmixNamespace& ns, const std::vector<uint32_t>& app_sizes) {
  if (app_sizes.empty()) return {};
  uint64_t total = 0;
  for (uint32_t n : app_sizes) total += n;
  if (total != ns.job_size)
    return make_error("PMIx: the parts' sizes add up to " + std::to_string(total) + ", not the " +
                      std::to_string(ns.job_size) + " ranks of the job");
  ns.app_sizes = app_sizes;
  uint32_t app = 0;
  uint64_t end = app_sizes[0];
  for (auto& p : ns.procs) {
    while (static_cast<uint64_t>(p.rank) >= end && app + 1 < app_sizes.size())
      end += app_sizes[++app];
    p.app = app;
  }
  return {};
}

PmixFences::PmixFences(int hosts, Complete complete)
    : complete_(std::move(complete)),
      arrived_(static_cast<size_t>(std::max(hosts, 0)), false),
      data_(arrived_.size()) {}

Status PmixFences::host_fence(int host, uint32_t seq, std::string data) {
  if (host < 0 || static_cast<size_t>(host) >= arrived_.size())
    return make_error("PMIx fence from unknown host index " + std::to_string(host));
  if (seq != seq_)
    return make_error("PMIx fence " + std::to_string(seq) + " reported while fence " +
                      std::to_string(seq_) + " is gathered");
  if (arrived_[host]) return make_error("PMIx fence " + std::to_string(seq) + " reported twice");
  arrived_[host] = true;
  data_[host] = std::move(data);
  if (++count_ < static_cast<int>(arrived_.size())) return {};
  std::string all;
  size_t total = 0;
  for (const auto& d : data_) total += d.size();
  all.reserve(total);
  for (auto& d : data_) {
    all += d;
    d.clear();
  }
  std::fill(arrived_.begin(), arrived_.end(), false);
  count_ = 0;
  complete_(seq_++, all);
  return {};
}

std::vector<int> PmixFences::missing_hosts() const {
  std::vector<int> out;
  if (count_ == 0) return out;  // no fence is being gathered
  for (size_t i = 0; i < arrived_.size(); ++i)
    if (!arrived_[i]) out.push_back(static_cast<int>(i));
  return out;
}

PmixModexRouter::PmixModexRouter(std::vector<uint32_t> host_of_rank)
    : host_of_rank_(std::move(host_of_rank)) {}

Result<PmixModexRouter::Hop> PmixModexRouter::request(int from, uint32_t id, int rank) {
  if (rank < 0 || static_cast<size_t>(rank) >= host_of_rank_.size())
    return make_error("PMIx data asked for rank " + std::to_string(rank) + ", not in the job");
  return request_to(from, id, static_cast<int>(host_of_rank_[rank]));
}

PmixModexRouter::Hop PmixModexRouter::request_to(int from, uint32_t id, int to) {
  const uint32_t mine = next_++;
  pending_[mine] = Pending{from, id, to};
  return Hop{to, mine};
}

Result<PmixModexRouter::Hop> PmixModexRouter::reply(int from, uint32_t id) {
  auto it = pending_.find(id);
  if (it == pending_.end() || it->second.to != from)
    return make_error("PMIx data answer " + std::to_string(id) + " that nobody asked for");
  Hop back{it->second.from, it->second.from_id};
  pending_.erase(it);
  return back;
}

std::vector<PmixModexRouter::Hop> PmixModexRouter::host_lost(int host) {
  std::vector<Hop> out;
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->second.to == host) {
      if (it->second.from != host) out.push_back({it->second.from, it->second.from_id});
      it = pending_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

}  // namespace ferry
