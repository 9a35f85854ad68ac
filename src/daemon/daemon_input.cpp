#include <cstdio>
#include <string_view>
#include <utility>

#include "daemon_impl.hpp"

namespace ferry {
namespace {

// A direct output route is opened once this much output went to stdout.
constexpr uint64_t kRouteAfter = uint64_t{1} << 20;

}  // namespace

void Daemon::Impl::read_input() {
  in_.async_read_some(asio::buffer(in_buf_.data(), in_buf_.size()), [this](std::error_code ec,
                                                                           size_t n) {
    if (ec) {
      // A stream that ends inside a frame was cut, or is not ferryrun's; one that fed
      // stdin to a job that never came is not ferryrun's either.
      if (const size_t left = reader_.buffered(); left > 0 && !front_gone_)
        ::fprintf(stderr, "ferryd: input ended inside a frame (%zu byte(s) of it arrived)\n", left);
      else if (early_stdin_ > 0 && !have_spec_ && !front_gone_)
        ::fprintf(stderr, "ferryd: input ended before the HostSpec, after stdin for its job\n");
      return front_lost();
    }
    reader_.feed(std::string_view(in_buf_.data(), n));
    last_heard_ = std::chrono::steady_clock::now();
    for (;;) {
      auto f = reader_.next_view();
      if (!f) return fatal(f.error().message);
      if (!*f) break;
      handle(**f);
      if (front_gone_) return;
    }
    read_input();
  });
}

void Daemon::Impl::handle(const wire::FrameView& f) {
  auto msg = wire::decode_to_daemon(f);
  if (!msg) return fatal(msg.error().message);
  std::visit(wire::Overloaded{
                 [this](wire::HostSpec& spec) { on_host_spec(std::move(spec)); },
                 [this](wire::Stdin& in) {
                   if (!have_spec_) early_stdin_ += in.data.size() + 1;
                   stdin_.feed(std::move(in.data));
                 },
                 [this](wire::Signal& s) { ranks_.signal_all(s.signo); },
                 [this](wire::Terminate& t) { terminate(std::chrono::milliseconds(t.grace_ms)); },
                 [](wire::Heartbeat&) {},  // reading it was the point (last_heard_)
                 [this](wire::KvReply& r) { kv_.reply(r); },
                 [this](wire::PmiBarrierDone& b) {
                   if (!pmi_) return fatal("a PMI barrier answer arrived, but PMI is off");
                   if (auto s = pmi_->barrier_done(b); !s) fatal(s.error().message);
                 },
                 [this](wire::StartRanks& m) { on_start_ranks(std::move(m)); },
                 [this](wire::PmixFenceDone& m) {
                   if (auto s = pmix_.fence_done(m); !s) fatal(s.error().message);
                 },
                 [this](wire::PmixModexRequest& m) { pmix_.modex_request(m); },
                 [this](wire::PmixNames& m) { pmix_.names_answer(m); },
                 [this](wire::PmixGroupDone& m) { pmix_.group_done(m); },
                 [this](wire::PmixSpawnDone& m) { pmix_.spawn_done(m); },
                 [this](wire::PmixSpawnJob& m) { on_spawn_job(std::move(m)); },
                 [this](wire::PmiSpawnDone& m) {
                   if (pmi_) pmi_->spawn_done(m);
                 },
                 [this](wire::PmiSpawnJob& m) { on_pmi_spawn_job(std::move(m)); },
                 [this](wire::PmixModexReply& m) {
                   if (auto s = pmix_.modex_reply(m); !s) fatal(s.error().message);
                 },
                 [this](wire::OutputRoute& r) { route_output(r); },
                 [this](wire::StateRequest& m) { state_.collect(m.id, ranks_.running()); },
                 [this](wire::Preflight& m) {
                   // Answered once this host's copy of the tree is in place: until then its
                   // loop may be held by the copy's making for longer than a connect may take.
                   if (sync_.busy()) return preflight_held_.push_back(std::move(m));
                   preflight_.handle(m);
                 },
                 [this](wire::CheckRequest&) { state_.check(); },
                 [this](wire::PmixStart& m) {
                   if (!have_spec_) pmix_.start_early(m.node);
                 },
                 [this](wire::SyncProbe& m) {
                   sync_.probe(m);
                   release_preflight();
                 },
                 [this](wire::SyncOffer& m) {
                   sync_.offer(m);
                   release_preflight();
                 },
                 [this](wire::SyncData& m) {
                   sync_.data(m);
                   release_preflight();
                 },
                 [this](wire::StopRanks& m) {
                   ranks_.stop(m.ranks, std::chrono::milliseconds(m.grace_ms));
                 },
             },
             *msg);
}

void Daemon::Impl::release_preflight() {
  if (sync_.busy()) return;
  for (wire::Preflight& m : std::exchange(preflight_held_, {})) preflight_.handle(m);
}

// ferryrun offers a direct route for the output (once). It is opened only once this ferryd
// has queued kRouteAfter bytes: a job that prints little pays neither the connection nor
// libcrypto. From then on frames go there as soon as it is open; until then, and if it
// never opens, they go on over stdout.
void Daemon::Impl::route_output(const wire::OutputRoute& offer) {
  if (route_offered_) return;
  route_offered_ = true;
  pump_.when_accepted(kRouteAfter, [this, offer, alive = alive_] {
    if (!*alive || front_gone_) return;
    open_output_route(io_, offer, [this, alive](Result<OpenedRoute> r) {
      if (*alive) route_opened(std::move(r));
    });
  });
}

void Daemon::Impl::route_opened(Result<OpenedRoute> r) {
  if (front_gone_) return;
  if (!r) {
    route_problem_ = host_ + ": output stays on SSH: " + r.error().message;
    if (have_spec_) tell_route_problem();
    return;
  }
  routed_ = std::make_unique<OutputPump>(
      io_, r->fd.release(),
      OutputPump::Events{[this] { output_idle(); }, [this] { front_lost(); }});
  // Everything queued on stdout so far leaves there; ferryrun reads that many bytes there
  // before the route's.
  routed_->seal_with(std::move(r->sealer), route_preamble(pump_.accepted()));
  channel_.reroute(*routed_);
}

// Why the route did not open, for --verbose (the spec says whether it is on); once.
void Daemon::Impl::tell_route_problem() {
  if (spec_.verbose && !route_problem_.empty()) log(route_problem_);
  route_problem_.clear();
}

void Daemon::Impl::fatal(const std::string& why) {
  ::fprintf(stderr, "ferryd: %s\n", why.c_str());
  queue(wire::encode(wire::Failure{-1, why}));
  exit_code_ = 2;
  terminate(std::chrono::milliseconds(0));
  front_lost();
}

}  // namespace ferry
