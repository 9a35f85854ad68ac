#include "rendezvous_service.hpp"

#include "ferry/rendezvous/framework_env.hpp"
#include "ferry/rendezvous/peer_auth.hpp"

namespace ferry {

RendezvousService::RendezvousService(const Placement& placement,
                                     std::function<void(const std::string&)> broadcast)
    : broadcast_(std::move(broadcast)),
      pmi_(static_cast<int>(placement.hosts.size()),
           [this](uint32_t epoch, const std::vector<PmiKv>& kvs) {
             wire::PmiBarrierDone done;
             done.epoch = epoch;
             for (const auto& kv : kvs) {
               done.keys.push_back(kv.key);
               done.values.push_back(kv.value);
             }
             broadcast_(wire::encode(done));
           }) {
  declare_horovod_scopes(kv_, placement);
}

Status RendezvousService::init() {
  auto s = new_job_secret();
  if (!s) return s.error();
  secret_ = std::move(s.value());
  return {};
}

const NicChoice& RendezvousService::choose(const std::vector<HostNetwork>& hosts,
                                           const std::vector<std::string>& requested) {
  NicOptions o;
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
  ++kv_requests_;
  auto r = kv_.serve(req.method, req.target, req.body);
  return wire::KvReply{req.id, static_cast<uint16_t>(r.status), std::move(r.body)};
}

Status RendezvousService::pmi_barrier(int host, const wire::PmiBarrier& b) {
  std::vector<PmiKv> puts;
  puts.reserve(b.keys.size());
  for (std::size_t i = 0; i < b.keys.size(); ++i) puts.push_back({b.keys[i], b.values[i]});
  return pmi_.host_barrier(host, b.epoch, std::move(puts));
}

}  // namespace ferry
