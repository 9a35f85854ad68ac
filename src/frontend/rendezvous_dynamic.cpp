// The front end's half of MPI's dynamic processes (RendezvousService::pmix_dynamic): the
// job's name service and its collectives over some processes, for every host's ferryd.

#include <algorithm>

#include "rendezvous_service.hpp"

namespace ferry {

namespace {

ProcId proc_of(const wire::PmixProcName& p) { return {p.nspace, p.rank}; }

}  // namespace

std::vector<int> RendezvousService::hosts_of(const ProcId& p) const {
  const std::vector<uint32_t>* map = &host_of_rank_;
  if (p.nspace != nspace_) {
    auto it = spawned_.find(p.nspace);
    if (it == spawned_.end()) return {};
    map = &it->second;
  }
  if (p.rank == kWildcardRank) {
    std::vector<int> all;
    for (uint32_t h : *map) all.push_back(static_cast<int>(h));
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    return all;
  }
  if (p.rank >= map->size()) return {};
  return {static_cast<int>((*map)[p.rank])};
}

void RendezvousService::add_namespace(const std::string& nspace,
                                      std::vector<uint32_t> host_of_rank) {
  spawned_[nspace] = std::move(host_of_rank);
}

Status RendezvousService::pmix_dynamic(int host, const wire::PmixDynamic& m) {
  return std::visit(wire::Overloaded{
                        [&](const wire::PmixPublish& p) { return publish(host, p); },
                        [&](const wire::PmixLookup& l) { return lookup(host, l); },
                        [&](const wire::PmixUnpublish& u) { return unpublish(host, u); },
                        [&](const wire::PmixGroupOp& g) { return group_op(host, g); },
                    },
                    m);
}

void RendezvousService::answer_lookup(const NameDirectory::Answer& a) {
  auto it = lookups_.find(a.ticket);
  if (it == lookups_.end()) return;
  const Asker asker = it->second;
  lookups_.erase(it);
  wire::PmixNames reply{asker.id, a.status, {}};
  for (const auto& e : a.found)
    reply.names.push_back({e.key, e.value, {e.owner.nspace, e.owner.rank}, e.bytes});
  send_to_(asker.host, wire::encode(reply));
}

Status RendezvousService::publish(int host, const wire::PmixPublish& m) {
  std::vector<NameDirectory::Entry> entries;
  entries.reserve(m.names.size());
  for (const auto& n : m.names) entries.push_back({n.key, n.value, {}, n.bytes});
  std::vector<NameDirectory::Answer> released;
  const int32_t status = names_.publish(proc_of(m.owner), entries, m.first_read, released);
  send_to_(host, wire::encode(wire::PmixNames{m.id, status, {}}));
  for (const auto& a : released) answer_lookup(a);
  return {};
}

Status RendezvousService::lookup(int host, const wire::PmixLookup& m) {
  // Tickets are the front end's own: two hosts' numbers may be equal.
  if (m.cancel) {
    for (auto it = lookups_.begin(); it != lookups_.end(); ++it)
      if (it->second.host == host && it->second.id == m.id) {
        names_.drop(it->first);
        lookups_.erase(it);
        break;
      }
    return {};
  }
  const uint64_t ticket = next_ticket_++;
  lookups_[ticket] = Asker{host, m.id};
  if (auto a = names_.lookup(ticket, m.keys, m.wait)) answer_lookup(*a);
  return {};
}

Status RendezvousService::unpublish(int host, const wire::PmixUnpublish& m) {
  send_to_(host,
           wire::encode(wire::PmixNames{m.id, names_.unpublish(proc_of(m.owner), m.keys), {}}));
  return {};
}

Status RendezvousService::group_op(int host, const wire::PmixGroupOp& m) {
  if (m.kind > static_cast<uint8_t>(GroupOps::Kind::kDisconnect))
    return make_error("a PMIx group operation of unknown kind " + std::to_string(m.kind));
  std::vector<ProcId> procs;
  procs.reserve(m.procs.size());
  for (const auto& p : m.procs) procs.push_back(proc_of(p));
  auto done =
      groups_.arrive(host, m.id, static_cast<GroupOps::Kind>(m.kind), std::move(procs), m.data);
  if (!done) return done.error();
  if (!*done) return {};
  ++pmix_groups_done_;
  for (const auto& a : (*done)->hosts)
    send_to_(a.host, wire::encode(wire::PmixGroupDone{a.id, (*done)->status, (*done)->data}));
  return {};
}

void RendezvousService::dynamic_host_lost(int host) {
  for (auto it = lookups_.begin(); it != lookups_.end();) {
    if (it->second.host == host) {
      names_.drop(it->first);
      it = lookups_.erase(it);
    } else {
      ++it;
    }
  }
  for (const auto& d : groups_.host_lost(host))
    for (const auto& a : d.hosts)
      send_to_(a.host, wire::encode(wire::PmixGroupDone{a.id, d.status, {}}));
}

}  // namespace ferry
