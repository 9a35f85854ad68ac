#pragma once

// ferryd's session with the front end, in four files by concept: daemon.cpp (the start and
// frames to the front end), daemon_input.cpp (frames from it), daemon_job.cpp (the job's
// course on this host, from HostSpec to its ranks started) and daemon_end.cpp (exits, the
// end of the job, and the end of it all when the front end goes away).

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ferry/common/read_buffer.hpp"
#include "ferry/daemon/daemon.hpp"
#include "ferry/daemon/kv_proxy.hpp"
#include "ferry/daemon/output_pump.hpp"
#include "ferry/daemon/own_name.hpp"
#include "ferry/daemon/pmi_proxy.hpp"
#include "ferry/daemon/sweeper.hpp"
#include "ferry/process/spawner.hpp"
#include "ferry/wire/frame.hpp"
#include "ferry/wire/messages.hpp"
#include "output_route.hpp"
#include "pmix_service.hpp"
#include "preflight_peer.hpp"
#include "rank_launcher.hpp"
#include "rank_output.hpp"
#include "rank_sampling.hpp"
#include "rank_set.hpp"
#include "state_collector.hpp"
#include "stdin_feed.hpp"
#include "sync_receiver.hpp"

namespace ferry {

// The session with the front end: frames in and out, the job's course on this host from
// HostSpec to Done, and the end of it all when the front end goes away. The ranks
// themselves are RankLauncher's (starting), RankSet's (exits, signals), RankStream's
// (output) and StdinFeed's (stdin).
class Daemon::Impl {
 public:
  Impl(asio::io_context& io, const DaemonOptions& opts);
  ~Impl() { *alive_ = false; }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  void start();
  int exit_code() const { return exit_code_; }

 private:
  // ---- frames to the front end (daemon.cpp) -------------------------------------------
  void queue(const std::string& frame);
  // Where frames go now: the direct route once it is open, else stdout.
  OutputPump& out() { return routed_ ? *routed_ : pump_; }
  bool output_idle_now() const { return pump_.idle() && (!routed_ || routed_->idle()); }
  void log(const std::string& line) { queue(wire::encode(wire::Log{line})); }
  void output_idle();
  void send_hello();
  void stop();

  // ---- frames from the front end (daemon_input.cpp) -----------------------------------
  void read_input();
  void handle(const wire::FrameView& f);
  void route_output(const wire::OutputRoute& offer);
  void route_opened(Result<OpenedRoute> r);
  void tell_route_problem();
  void fatal(const std::string& why);

  // ---- the job's course and its ranks' start (daemon_job.cpp) -------------------------
  void in_synced_copy(wire::HostSpec& spec) const;
  void on_host_spec(wire::HostSpec spec);
  void on_spawn_job(wire::PmixSpawnJob m);
  void on_pmi_spawn_job(wire::PmiSpawnJob m);
  void on_start_ranks(wire::StartRanks m);
  void next_attempt();
  void heartbeat();
  void start_rendezvous();
  void look_up_own_name();
  void terminate(std::chrono::milliseconds grace);
  void stop_waiting_for_name();
  void launch(size_t local);
  void start_rank(Rank& r);

  // ---- exits and the end (daemon_end.cpp) ---------------------------------------------
  void rank_reported(const Rank& r, const wire::Exited& e);
  void check_done();
  void wait_signal();
  void front_lost();
  void shut_down();

  asio::io_context& io_;
  const std::string host_;
  std::unique_ptr<ProcessSpawner> own_spawner_;  // when the options name none
  ProcessSpawner& spawner_;
  const bool subreaper_;
  const Settings settings_;
  SweepScope sweep_;  // what the sweep kills besides tagged processes and the ranks' groups
  asio::posix::stream_descriptor in_;
  ReadBuffer in_buf_{size_t{64} * 1024};
  wire::FrameReader reader_;
  std::chrono::steady_clock::time_point last_heard_ = std::chrono::steady_clock::now();
  OutputPump pump_;                     // stdout
  std::unique_ptr<OutputPump> routed_;  // the direct route, once open
  bool route_offered_ = false;
  std::string route_problem_;
  OutputChannel channel_;
  asio::signal_set signals_;
  asio::steady_timer beat_timer_, exit_timer_;
  StdinFeed stdin_;
  RankLauncher launcher_;
  OwnNameCheck name_check_{io_};  // this host's name, looked up off the loop for the launcher
  RankSet ranks_;                 // after channel_: its streams are parked there
  Guard guard_;
  KvProxy kv_;
  std::unique_ptr<PmiProxy> pmi_;
  std::vector<std::unique_ptr<PmiProxy>> retired_pmi_;  // earlier attempts'
  PmixService pmix_;
  PreflightPeer preflight_{io_, [this](const std::string& frame) { queue(frame); }};
  std::vector<wire::Preflight> preflight_held_;  // while the tree's copy is made
  void release_preflight();
  SyncReceiver sync_{[this](const std::string& frame) { queue(frame); }};
  RankSampling sampling_{io_, [this] { return ranks_.running_since(); },
                         [this](const std::string& frame) { queue(frame); }, settings_.device_root};

  wire::HostSpec spec_;  // the launcher points into it
  std::string tag_;      // kJobTagVar value of this ferryd's ranks
  bool have_spec_ = false;
  bool front_gone_ = false;
  bool finished_ = false;
  bool stopped_ = false;
  int exit_code_ = 0;
  size_t early_stdin_ = 0;  // Stdin frames before the HostSpec (held for the stdin rank)
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  StateCollector state_{io_, [this](const std::string& frame) { queue(frame); }};  // last: joins
};

}  // namespace ferry
