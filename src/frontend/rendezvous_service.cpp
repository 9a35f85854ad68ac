#include "rendezvous_service.hpp"

#include <algorithm>

#include "ferry/rendezvous/framework_env.hpp"
#include "ferry/rendezvous/peer_auth.hpp"

namespace ferry {

namespace {

// The host (placement index) of every rank.
std::vector<uint32_t> host_of_rank(const Placement& placement) {
  std::vector<uint32_t> out(static_cast<std::size_t>(std::max(placement.world_size, 0)), 0);
  for (std::size_t h = 0; h < placement.hosts.size(); ++h)
    for (const auto& r : placement.hosts[h].ranks)
      if (r.rank >= 0 && r.rank < placement.world_size) out[r.rank] = static_cast<uint32_t>(h);
  return out;
}

}  // namespace

RendezvousService::RendezvousService(const Placement& placement, std::string nspace,
                                     std::function<void(const std::string&)> broadcast,
                                     std::function<void(int, const std::string&)> send_to)
    : broadcast_(std::move(broadcast)),
      send_to_(std::move(send_to)),
      pmi_(static_cast<int>(placement.hosts.size()),
           [this](uint32_t epoch, const std::vector<PmiKv>& kvs) {
             wire::PmiBarrierDone done;
             done.epoch = epoch;
             for (const auto& kv : kvs) {
               done.keys.push_back(kv.key);
               done.values.push_back(kv.value);
             }
             broadcast_(wire::encode(done));
           }),
      pmix_fences_(static_cast<int>(placement.hosts.size()),
                   [this](uint32_t seq, const std::string& data) {
                     ++pmix_fences_done_;
                     broadcast_(wire::encode(wire::PmixFenceDone{{seq, data}}));
                   }),
      pmix_modex_(host_of_rank(placement)),
      nspace_(std::move(nspace)),
      host_of_rank_(host_of_rank(placement)),
      groups_([this](const ProcId& p) { return hosts_of(p); }) {
  declare_horovod_scopes(kv_, placement);
}

Status RendezvousService::init() {
  auto s = new_job_secret();
  if (!s) return s.error();
  secret_ = std::move(s.value());
  return {};
}

const NicChoice& RendezvousService::choose(const std::vector<HostNetwork>& hosts,
                                           const std::vector<std::string>& requested,
                                           const std::vector<std::string>& excluded) {
  NicOptions o;
  o.exclude = excluded;
  for (const auto& r : requested) o.interface += (o.interface.empty() ? "" : ",") + r;
  choice_ = choose_network_interface(hosts, o);
  return choice_;
}

std::vector<std::string> RendezvousService::host_environment(
    std::size_t host, uint16_t kv_port, const std::vector<std::string>& exports) const {
  auto env = nic_environment(choice_, host, exports);
  if (kv_port != 0) {
    auto hv = horovod_environment(kv_port, secret_, exports);
    env.insert(env.end(), hv.begin(), hv.end());
  }
  return env;
}

void RendezvousService::reset_store(const std::vector<ElasticAssignment>& world) {
  kv_ = KvStore{};
  for (const auto& a : world) {
    kv_.set_scope_size("global", a.size);
    kv_.set_scope_size("local_" + a.host, a.local_size);
    kv_.set_scope_size("cross_" + std::to_string(a.local_rank), a.cross_size);
  }
}

wire::KvReply RendezvousService::serve(const wire::KvRequest& req) {
  auto r = kv_.serve(req.method, req.target, req.body);
  return wire::KvReply{req.id, static_cast<uint16_t>(r.status), std::move(r.body)};
}

Status RendezvousService::pmi_barrier(int host, const wire::PmiBarrier& b) {
  std::vector<PmiKv> puts;
  puts.reserve(b.keys.size());
  for (std::size_t i = 0; i < b.keys.size(); ++i) puts.push_back({b.keys[i], b.values[i]});
  if (b.kvsname.empty()) return pmi_.host_barrier(host, b.epoch, std::move(puts));
  auto it = pmi_groups_.find(b.kvsname);
  if (it == pmi_groups_.end())
    return make_error("a PMI barrier of group '" + b.kvsname + "', which no spawn made");
  return it->second.host_barrier(host, b.epoch, std::move(puts));
}

Status RendezvousService::add_pmi_group(const std::string& kvsname, const std::vector<int>& hosts) {
  auto answer = [this, kvsname](uint32_t epoch, const std::vector<PmiKv>& kvs) {
    wire::PmiBarrierDone done;
    done.epoch = epoch;
    done.kvsname = kvsname;
    for (const auto& kv : kvs) {
      done.keys.push_back(kv.key);
      done.values.push_back(kv.value);
    }
    const std::string frame = wire::encode(done);
    for (int h : pmi_groups_.at(kvsname).hosts()) send_to_(h, frame);
  };
  if (!pmi_groups_.try_emplace(kvsname, hosts, std::move(answer)).second)
    return make_error("PMI process group '" + kvsname + "' exists already");
  return {};
}

Status RendezvousService::pmix_fence(int host, const wire::PmixFence& f) {
  return pmix_fences_.host_fence(host, f.seq, f.data);
}

void RendezvousService::pmix_modex_request(int host, const wire::PmixModexRequest& r) {
  Result<PmixModexRouter::Hop> hop = make_error("");
  if (r.nspace.empty() || r.nspace == nspace_) {
    hop = pmix_modex_.request(host, r.id, r.rank);
  } else {
    // A spawned process's data: its host from the spawn's placement.
    auto to = hosts_of({r.nspace, static_cast<uint32_t>(r.rank)});
    if (r.rank >= 0 && to.size() == 1) hop = pmix_modex_.request_to(host, r.id, to[0]);
  }
  if (!hop) return send_to_(host, wire::encode(wire::PmixModexReply{r.id, kPmixErrNotFound, {}}));
  ++pmix_requests_;
  send_to_(hop->host, wire::encode(wire::PmixModexRequest{hop->id, r.rank, r.nspace}));
}

Status RendezvousService::pmix_modex_reply(int host, const wire::PmixModexReply& r) {
  auto hop = pmix_modex_.reply(host, r.id);
  if (!hop) return hop.error();
  send_to_(hop->host, wire::encode(wire::PmixModexReply{hop->id, r.status, r.data}));
  return {};
}

void RendezvousService::host_lost(int host) {
  for (const auto& hop : pmix_modex_.host_lost(host))
    send_to_(hop.host, wire::encode(wire::PmixModexReply{hop.id, kPmixErrUnreach, {}}));
  dynamic_host_lost(host);
}

std::vector<int> RendezvousService::pmix_missing() const {
  auto fences = pmix_fences_.missing_hosts();
  return fences.empty() ? groups_.missing_hosts() : fences;
}

}  // namespace ferry
