#include <cstdio>

#include "daemon_impl.hpp"

namespace ferry {

// --sync: the ranks start in the job's copy; relative directories are taken inside it.
void Daemon::Impl::in_synced_copy(wire::HostSpec& spec) const {
  if (sync_.copy().empty()) return;
  spec.wdir = sync_.inside_copy(spec.wdir);
  spec.wdir_fallback = false;
  for (wire::RankLaunch& r : spec.ranks)
    if (!r.wdir.empty()) r.wdir = sync_.inside_copy(r.wdir);
}

void Daemon::Impl::on_host_spec(wire::HostSpec spec) {
  if (have_spec_ && !(finished_ && spec_.keep_serving))
    return fatal(finished_ ? "a second host spec arrived" : "a host spec arrived while ranks run");
  if (have_spec_) next_attempt();
  const bool first = !have_spec_;
  have_spec_ = true;
  spec_ = std::move(spec);
  in_synced_copy(spec_);
  preflight_.close();  // the ranks' own MASTER_PORT from now on
  tell_route_problem();
  if (first && spec_.heartbeat_ms > 0) heartbeat();
  if (first) {
    tag_ = spec_.job_id + "." + std::to_string(::getpid());
    guard_.set_job(tag_);
  }
  start_rendezvous();
  sampling_.start(std::chrono::milliseconds(spec_.sample_ms));
  launcher_.prepare(spec_, tag_, pmi_.get());
  look_up_own_name();
  if (!launcher_.error_dir().empty()) guard_.remove_at_exit(launcher_.error_dir());
  launcher_.use_pmix(pmix_.begin(spec_, launcher_.cpusets()));
  bool stdin_here = false;
  for (size_t i = 0; i < spec_.ranks.size(); ++i) {
    ranks_.add(spec_.ranks[i].rank, i);
    stdin_here |= spec_.ranks[i].rank == spec_.stdin_rank;
  }
  // Stdin kept for a rank that is not here (or for none) is dropped, so acknowledged.
  if (!stdin_here) stdin_.close();
  sync_.job_started();
  if (spec_.ranks.empty()) return check_done();
  // Every rank starts in its own turn, so frames already read (a Terminate) act first; a
  // horovodrun job's once this host's name is known to be one its gloo can use.
  if (launcher_.name_need() == RankLauncher::NameNeed::kRequire)
    name_check_.then([this] { launch(0); });
  else
    asio::post(io_, [this] { launch(0); });
}

// This host's name, looked up for Horovod's gloo on a thread (a DNS server that does not
// answer holds a lookup 5 s a try), its result given to the launcher on the loop.
void Daemon::Impl::look_up_own_name() {
  if (launcher_.name_need() == RankLauncher::NameNeed::kNone) return name_check_.drop();
  name_check_.start(host_, [this](const Status& st) { launcher_.name_checked(st); });
}

// Ranks that join the job running here (elastic Horovod: new slots on this host). They
// start after the spec's own, one a turn, and are watched, stopped and swept as those are.
// Processes MPI_Comm_spawn started: their namespace registered here first (whether or not
// any runs here), then this host's start as ranks that joined do. Should the namespace
// not register, they fail to start, each with the reason.
void Daemon::Impl::on_spawn_job(wire::PmixSpawnJob m) {
  if (auto s = pmix_.spawn_job(m); !s) {
    log(host_ + ": MPI_Comm_spawn: " + s.error().message);
    for (const auto& rl : m.ranks) queue(wire::encode(wire::Exited{rl.rank, 127, 0, {}}));
    return;
  }
  if (!m.ranks.empty()) on_start_ranks(wire::StartRanks{std::move(m.ranks)});
}

// Processes a PMI spawn (MPICH's MPI_Comm_spawn) started here: their process group is served
// by this host's PMI server first, then they start as ranks that joined do.
void Daemon::Impl::on_pmi_spawn_job(wire::PmiSpawnJob m) {
  Status st = pmi_
                  ? pmi_->add_group(m)
                  : Status(make_error("processes were spawned, but this host's ranks have no PMI"));
  if (!st) {
    log(host_ + ": MPI_Comm_spawn: " + st.error().message);
    for (const auto& rl : m.ranks) queue(wire::encode(wire::Exited{rl.rank, 127, 0, {}}));
    return;
  }
  if (!m.ranks.empty()) on_start_ranks(wire::StartRanks{std::move(m.ranks)});
}

void Daemon::Impl::on_start_ranks(wire::StartRanks m) {
  if (!have_spec_) return fatal("ranks to start arrived before the host spec");
  for (const auto& rl : m.ranks)
    if (ranks_.find(rl.rank))
      return fatal("rank " + std::to_string(rl.rank) + " to start is already on this host");
  if (finished_) {
    // Every rank here ended and Done went out: these never run, and say so.
    for (const auto& rl : m.ranks) queue(wire::encode(wire::Exited{rl.rank, 0, SIGKILL, {}}));
    return;
  }
  const size_t first = ranks_.ranks().size();
  for (auto& rl : m.ranks) {
    ranks_.add(rl.rank, spec_.ranks.size());
    spec_.ranks.push_back(std::move(rl));
  }
  asio::post(io_, [this, first] { launch(first); });
}

// The previous attempt is over here (Done was sent): its ranks and PMI go, the job tag,
// the guard and the connection stay.
void Daemon::Impl::next_attempt() {
  ranks_.clear();
  if (pmi_) retired_pmi_.push_back(std::move(pmi_));  // its last handlers may be queued
  ranks_.use_pmi(nullptr);
  finished_ = false;
}

// With heartbeats on, ferryd sends one every interval and gives up on a front end it
// has not heard from for three: a cut link may never deliver EOF.
void Daemon::Impl::heartbeat() {
  const auto interval = std::chrono::milliseconds(spec_.heartbeat_ms);
  if (std::chrono::steady_clock::now() - last_heard_ > 3 * interval) {
    ::fprintf(stderr, "ferryd: no word from ferryrun for %u ms; stopping the job\n",
              3 * spec_.heartbeat_ms);
    return front_lost();
  }
  queue(wire::encode(wire::Heartbeat{}));
  beat_timer_.expires_after(interval);
  beat_timer_.async_wait([this](std::error_code ec) {
    if (!ec && !front_gone_ && (!finished_ || spec_.keep_serving)) heartbeat();
  });
}

void Daemon::Impl::start_rendezvous() {
  kv_.set_secret(spec_.secret);
  // A rank whose put the full store refused fails; it is stopped, as it may go on putting.
  kv_.on_store_full([this](pid_t pid) {
    if (Rank* r = ranks_.find_process(pid); r && r->state == Rank::State::kRunning) {
      queue(wire::encode(wire::Failure{r->rank, store_full_message("key-value store")}));
      ranks_.stop(*r, std::chrono::milliseconds(0));
    }
  });
  if (!spec_.pmi) return;
  PmiProxy::Events ev;
  ev.send = [this](const std::string& frame) { queue(frame); };
  ev.closed = [this](int rank) { ranks_.pmi_closed(rank); };
  pmi_ = std::make_unique<PmiProxy>(io_, pmi_host_config_of(spec_), std::move(ev));
  ranks_.use_pmi(pmi_.get());
}

// The job is told to stop (Terminate, or a fatal error): its ranks get `grace`, and those
// that wait for this host's name are reported as never started.
void Daemon::Impl::terminate(std::chrono::milliseconds grace) {
  ranks_.terminate(grace);
  stop_waiting_for_name();
}

// Told to stop while a horovodrun job's ranks wait for this host's name: they will never
// run, so they do not wait for the lookup either (a DNS server that does not answer holds it
// for seconds); each is reported as not started now.
void Daemon::Impl::stop_waiting_for_name() {
  if (launcher_.name_need() != RankLauncher::NameNeed::kRequire || !name_check_.pending()) return;
  name_check_.drop();
  asio::post(io_, [this] { launch(0); });
}

// Starts the rank at `local`, then the next one in a later turn.
void Daemon::Impl::launch(size_t local) {
  const auto& ranks = ranks_.ranks();
  if (local >= ranks.size()) return;
  start_rank(*ranks[local]);
  asio::post(io_, [this, local] { launch(local + 1); });
}

// Told to stop meanwhile (Terminate, or the front end gone), the rank is not started: it
// is reported as killed, so the front end hears of every rank.
void Daemon::Impl::start_rank(Rank& r) {
  if (r.state != Rank::State::kPending) return;  // stopped before its turn, or started
  if (ranks_.terminating() || front_gone_) return ranks_.not_started(r, 0, SIGKILL);
  auto l = launcher_.start(r.local);
  if (!l) {
    queue(wire::encode(wire::Failure{r.rank, l.error().message}));
    return ranks_.not_started(r, 127, 0);
  }
  ranks_.started(r, l->pid, std::move(l->out), std::move(l->err));
  guard_.add_pgid(l->pid);
  if (l->in) stdin_.attach(std::move(l->in));
  queue(wire::encode(wire::Started{r.rank, l->pid}));
  kv_.set_candidates(ranks_.started_pids());
}

}  // namespace ferry
