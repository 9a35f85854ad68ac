#include "host_link.hpp"

#include <algorithm>

#include "ferry/rendezvous/interfaces.hpp"

namespace ferry {

HostLink::HostLink(size_t index, HostPlan p, HostReach reach, HostEvents& events, OutputSink& out)
    : plan(std::move(p)),
      local(reach.local),
      reach_reason(std::move(reach.reason)),
      ranks_left(static_cast<int>(plan.ranks.size())),
      index_(index),
      events_(events),
      out_(out) {}

const RankSlot* HostLink::slot(int rank) const {
  // A host's ranks are in rank order (HostPlan).
  auto it = std::lower_bound(plan.ranks.begin(), plan.ranks.end(), rank,
                             [](const RankSlot& s, int r) { return s.rank < r; });
  return it != plan.ranks.end() && it->rank == rank ? &*it : nullptr;
}

HostNetwork HostLink::network(const std::string& this_machine, std::string& problem) const {
  HostNetwork n;
  n.label = name();
  n.reached_at = local ? this_machine : link->peer_address();
  if (auto ifs = interfaces_from_lines(hello_msg.interfaces))
    n.interfaces = *ifs;
  else
    problem = ifs.error().message;
  return n;
}

void HostLink::attach(std::unique_ptr<Link> opened) {
  link = std::move(opened);
  link->start(
      [this](std::string_view bytes) {
        if (!retired_) on_data(bytes);
      },
      [this](const std::string& reason) {
        if (!retired_) events_.on_closed(index_, reason);
      });
}

void HostLink::send_running(const std::string& frame) {
  if (link && !closed && spec_sent) link->send(frame);
}

void HostLink::begin_attempt(HostPlan p, int index) {
  plan = std::move(p);
  attempt_index = index;
  ranks_left = static_cast<int>(plan.ranks.size());
  spec_sent = false;
  done = false;
}

void HostLink::close() {
  if (link) link->close();
  closed = true;
}

void HostLink::on_data(std::string_view bytes) {
  last_heard = Clock::now();
  reader_.feed_borrowed(bytes);  // `bytes` outlives the loop below
  for (;;) {
    auto f = reader_.next_view();
    if (!f) return events_.on_broken(index_, f.error().message);
    if (!*f) break;
    if (hello)
      handle_frame(**f);
    else
      handle_hello(**f);
    if (closed) return;
  }
  out_.flush();
}

void HostLink::handle_hello(const wire::FrameView& f) {
  auto h = wire::decode<wire::Hello>(f);
  if (!h) return events_.on_broken(index_, h.error().message);
  hello = true;
  hello_msg = std::move(h.value());
  free_port = hello_msg.free_port;
  events_.on_hello(index_);
}

void HostLink::handle_frame(const wire::FrameView& f) {
  auto msg = wire::decode_to_front(f);
  if (!msg) return events_.on_broken(index_, msg.error().message);
  const size_t i = index_;
  HostEvents& ev = events_;
  // A rank another host runs (or none) means this ferryd is confused: trust none of it.
  auto mine = [&](int rank, const char* what) {
    if (owns(rank)) return true;
    ev.on_broken(i, std::string(what) + " of a foreign rank");
    return false;
  };
  std::visit(wire::Overloaded{
                 [&](const wire::OutputView& o) {
                   if (!mine(o.rank, "output")) return;
                   out_.write(o.rank, static_cast<StreamId>(o.stream), o.data);
                   RankOutput& seen = output[o.rank];
                   seen.last = Clock::now();
                   if (seen.bytes == 0) seen.first = seen.last;
                   seen.bytes += o.data.size();
                   if (tail) tail->append(o.rank, o.data);
                 },
                 [&](const wire::Started& s) {
                   if (mine(s.rank, "start")) ev.on_started(i, s);
                 },
                 [&](const wire::Exited& e) {
                   if (mine(e.rank, "exit")) ev.on_exited(i, e);
                 },
                 [&](const wire::PmiAbort& a) {
                   if (mine(a.rank, "abort")) ev.on_pmi_abort(i, a);
                 },
                 [&](const wire::Failure& m) { ev.on_failure(i, m); },
                 [](const wire::Heartbeat&) {},  // reading it was the point (last_heard)
                 [&](const wire::StdinAck& a) { ev.on_stdin_ack(i, a.bytes); },
                 [&](const wire::KvRequest& q) { ev.on_kv_request(i, q); },
                 [&](const wire::PmiBarrier& b) { ev.on_pmi_barrier(i, b); },
                 [&](const wire::PmixFence& f) { ev.on_pmix_fence(i, f); },
                 [&](const wire::PmixModexRequest& r) { ev.on_pmix_modex_request(i, r); },
                 [&](const wire::PmixModexReply& r) { ev.on_pmix_modex_reply(i, r); },
                 [&](const wire::PmixPublish& m) { ev.on_pmix_dynamic(i, m); },
                 [&](const wire::PmixLookup& m) { ev.on_pmix_dynamic(i, m); },
                 [&](const wire::PmixUnpublish& m) { ev.on_pmix_dynamic(i, m); },
                 [&](const wire::PmixGroupOp& m) { ev.on_pmix_dynamic(i, m); },
                 [&](const wire::PmixSpawn& m) { ev.on_pmix_spawn(i, m); },
                 [&](const wire::PmiSpawn& m) { ev.on_pmi_spawn(i, m); },
                 [&](const wire::Log& l) { ev.on_log(i, l.line); },
                 [&](const wire::StateReport& r) { ev.on_state_report(i, r); },
                 [&](const wire::PreflightResult& r) { ev.on_preflight_result(i, r); },
                 [&](const wire::CheckReport& r) { ev.on_check_report(i, r); },
                 [&](const wire::SyncNeed& m) { ev.on_sync_need(i, m); },
                 [&](const wire::SyncAck& m) { ev.on_sync_ack(i, m); },
                 [&](const wire::SyncReady& m) { ev.on_sync_ready(i, m); },
                 [&](const wire::Samples& m) { ev.on_samples(i, m); },
                 [&](const wire::Done& d) {
                   if (d.free_port) free_port = d.free_port;
                   ev.on_done(i, d);
                 },
             },
             *msg);
}

std::string this_machine_address(const HostLinks& hosts) {
  for (const auto& h : hosts)
    if (h->link && !h->local)
      if (std::string a = h->link->local_address(); !a.empty()) return a;
  return "";
}

std::string rank0_address(const HostLink& first, const HostLinks& hosts) {
  if (std::string peer = first.link ? first.link->peer_address() : ""; !peer.empty()) return peer;
  std::string here = this_machine_address(hosts);
  return here.empty() ? "127.0.0.1" : here;
}

}  // namespace ferry
