#pragma once
// Private to src/frontend/: the job controller's state and its parts. Job::Impl is the hub of
// hosts and attempts: job.cpp starts the hosts and hears what they report, job_failures.cpp how
// a rank's or a host's end counts, job_attempts.cpp what each host of an attempt is sent (and
// the hosts opened again for the next). What follows a failure is not the hub's: it asks its
// FollowUp (job_follow_up.hpp), one of two: RestartAttempts (the job ends, or restarts, or goes
// on without a lost host: job_restart.cpp) or HorovodElastic (horovodrun's rounds:
// job_elastic.cpp, job_elastic_hosts.cpp). Each host's link and its frames are in host_link.cpp.

#include <asio.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ferry/frontend/failure_report.hpp"
#include "ferry/frontend/host_spec.hpp"
#include "ferry/frontend/job.hpp"
#include "ferry/frontend/job_end.hpp"
#include "ferry/frontend/job_summary.hpp"
#include "ferry/frontend/preflight_report.hpp"
#include "ferry/frontend/stdin_forwarder.hpp"
#include "ferry/sync/tree_reader.hpp"
#include "ferry/transport/output_route.hpp"
#include "host_link.hpp"
#include "job_top.hpp"
#include "job_watch.hpp"
#include "rendezvous_service.hpp"

namespace ferry {

/// One run of the job's ranks. The first attempt runs on every host; after a failure the job
/// may run another (RestartPolicy), on the same hosts or on those that are left.
struct Attempt {
  int number = 0;
  Placement placement;
  std::vector<size_t> members;  // host ids (index in Job::Impl::hosts_), in placement order
  std::vector<int> rank_pid;    // 0 until its Started
  std::vector<std::string> rank_failure;  // ferryd's reason, "" none
  std::vector<bool> rank_exited;          // its Exited came (or its host was lost)
  JobEnd end;
  bool rank_succeeded = false;  // a rank exited 0 before any failure
  int hosts_lost = 0;
  bool over = false;  // every member said Done or was lost
  // MPI_Comm_spawn's processes: numbered after the world's ranks (rank_pid and friends
  // grow), and named for the failure report ("spawned process 1:0"), by that number.
  int spawns = 0;
  std::map<int, std::string> spawned;
};

// The state report being gathered: the hosts still to answer, the ranks' states so far, and
// what follows once it is printed (the abort, after --timeout).
struct PendingReport {
  uint32_t id = 0;
  std::string why;
  std::set<size_t> waiting;
  std::set<size_t> lost;
  std::map<int32_t, wire::RankState> ranks;
  std::function<void()> then;
};
// The preflight under way. First round: rank 0's host listens at MASTER_ADDR, the others connect
// there. Second round (`peers`): every host listens on its own address on the chosen interface
// (`peer_address`, by member index; `peer_port` once it listens) and connects to the next
// host's. The answers so far (by host id), and the round's time limit.
struct PendingPreflight {
  size_t rank0 = 0;
  std::string address;
  uint16_t port = 0;
  bool listening = false;
  bool peers = false;
  std::vector<std::string> peer_address;
  std::vector<std::string> peer_interface;
  std::vector<uint16_t> peer_port;
  std::set<size_t> waiting;
  std::map<size_t, wire::PreflightResult> results;
  std::string target_interface;
  std::chrono::steady_clock::time_point began;
};
// ferryrun --check: the hosts still to describe themselves, and their descriptions; each
// host's preflight result ("ok", "failed"), kept from the preflight for the table.
struct PendingCheck {
  std::set<size_t> waiting;
  std::map<size_t, wire::CheckReport> reports;
};

// clang-tidy 14 asks a class with virtual functions for a virtual destructor even when it is final.
class Job::Impl final : private HostEvents {  // NOLINT(cppcoreguidelines-virtual-class-destructor)
 public:
  using Clock = std::chrono::steady_clock;

  Impl(asio::io_context& io, JobOptions opts, Launchers launchers, OutputSink& out,
       Diagnostics& diag, std::optional<Placement> placed);
  // Launchers may outlive the job (an SSH session lingers to flush): their callbacks check.
  ~Impl();
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  Impl(Impl&&) = delete;
  Impl& operator=(Impl&&) = delete;

  int run();

 private:
  class FollowUp;
  class RestartAttempts;
  class HorovodElastic;

  enum class Phase {
    kStarting,   // the hosts are being opened for the first attempt
    kRunning,    // an attempt runs
    kBetween,    // an attempt ended and another follows: lost hosts are being opened again
    kFinishing,  // no attempt follows: the links close
  };

  // ---- job.cpp: hosts, what they report, how an attempt ends ----
  std::string since_start() const;
  void open_host(size_t i);
  void open_all();
  void start_timed_out();
  void daemon_stderr(size_t i, const std::string& line);
  void on_open(size_t i, Result<std::unique_ptr<Link>> r);
  std::unique_ptr<Link> offer_route(std::unique_ptr<Link> link);
  void on_hello(size_t i) override;
  void check_started();
  void show_progress();
  void heartbeat();
  void pause_reading(bool paused);
  void reader_gone();
  void start_stdin(size_t host);
  void on_started(size_t i, const wire::Started& s) override;
  void on_failure(size_t i, const wire::Failure& m) override;
  void on_stdin_ack(size_t i, uint32_t bytes) override;
  void on_kv_request(size_t i, const wire::KvRequest& q) override;
  void on_pmi_barrier(size_t i, const wire::PmiBarrier& b) override;
  void on_pmix_fence(size_t i, const wire::PmixFence& f) override;
  void on_pmix_modex_request(size_t i, const wire::PmixModexRequest& r) override;
  void on_pmix_modex_reply(size_t i, const wire::PmixModexReply& r) override;
  void on_pmix_dynamic(size_t i, const wire::PmixDynamic& m) override;
  void on_pmix_spawn(size_t i, const wire::PmixSpawn& m) override;
  void on_pmi_spawn(size_t i, const wire::PmiSpawn& m) override;
  // A spawn's processes placed (job_spawn.cpp): its number, its name, each process's
  // launch by member, the member of each, and the hosts' names ("node1, node2").
  struct SpawnPlan {
    int spawn = 0;
    std::string name;
    std::vector<std::vector<wire::RankLaunch>> per_host;
    std::vector<uint32_t> node_of_rank;
    std::vector<uint32_t> app_sizes;
    std::string on;
  };
  Result<SpawnPlan> plan_spawn(const std::vector<wire::PmixSpawnApp>& apps,
                               const std::string& prefix);
  std::string spawner_name(int process, const std::string& host) const;
  Result<std::vector<int>> spawn_slots(uint64_t total) const;
  wire::RankLaunch add_spawned(int spawn, int child, size_t j, uint32_t app,
                               const wire::PmixSpawnApp& a, const std::string& nspace);
  void on_log(size_t i, const std::string& line) override;
  void on_done(size_t i, const wire::Done& d) override;
  void on_state_report(size_t i, const wire::StateReport& r) override;
  RankWhere where(size_t i, int rank) const;
  uint32_t kill_grace_ms() const;
  void fail_attempt(const JobFailure& failure);
  void on_pmi_abort(size_t i, const wire::PmiAbort& a) override;
  void on_exited(size_t i, const wire::Exited& e) override;
  void abort_attempt(uint32_t grace_ms);
  void on_closed(size_t i, const std::string& reason) override;
  void on_broken(size_t i, const std::string& why) override;
  void host_lost(size_t i, const std::string& why);
  void maybe_finish();
  void wait_signal();
  void on_signal(int signo);
  void wait_passed_signal();

  // ---- job_hang.cpp: --timeout, --stall-timeout and the state report (also on SIGQUIT) ----
  void watch_for_hangs();
  void on_job_timeout();
  void check_stall();
  void on_report_signal();
  void request_report(const std::string& why, std::function<void()> then);
  void report_host_gone(size_t i);
  void print_report();

  // ---- job_preflight.cpp: the data network's preflight before the first attempt's ranks ----
  bool want_preflight() const;
  void start_preflight();
  void on_preflight_result(size_t i, const wire::PreflightResult& r) override;
  void start_peer_preflight();
  void preflight_over();
  void arm_preflight_timer();
  PreflightFailure preflight_failure(size_t j, const PendingPreflight& p) const;

  // ---- job_sync.cpp: --sync, before an attempt's ranks on hosts that lack the tree ----
  bool syncing() const { return (opts_.sync || opts_.sync_request) && !opts_.check; }
  void read_sync_tree();
  void on_tree_read(Result<SyncTree> tree);
  bool want_sync() const;
  void start_sync();
  void probe_sync(size_t i);
  bool sync_before_join(size_t i);
  const std::string& sync_offer_frame();
  void on_sync_need(size_t i, const wire::SyncNeed& m) override;
  void on_sync_ack(size_t i, const wire::SyncAck& m) override;
  void on_sync_ready(size_t i, const wire::SyncReady& m) override;
  // The job's view (job_watch.hpp), kept only with --report, --trace or --stragglers.
  void on_samples(size_t i, const wire::Samples& m) override;
  std::string rank_label(int rank) const;
  OutputTail* tail_for_links() const {
    return watch_ && (opts_.top || opts_.board) ? &watch_->tail() : nullptr;
  }
  // --top (job_top.hpp): opened once the first rank started, closed when the job ends.
  void open_top();
  void send_sync_pieces(size_t i);
  void show_sync_progress(bool now);
  void sync_failed(size_t i, const std::string& why);
  void watch_sync();
  void after_sync();

  // ---- job_check.cpp: ferryrun --check ----
  void start_check();
  void on_check_report(size_t i, const wire::CheckReport& r) override;
  void print_check();

  // ---- job_attempts.cpp: attempts ----
  void start_pmix_early();
  void launch_attempt(std::vector<size_t> members, const std::string& how);
  void send_specs();
  // Both under way at once before an attempt's ranks start (job_attempts.cpp): the hosts'
  // copies of the tree and the preflight; the HostSpecs go once neither is left.
  struct StartGate {
    bool sync = false, preflight = false;
    bool armed = false;  ///< the HostSpecs not sent yet
  };
  void start_gated(bool first);
  void sync_done();
  void preflight_done();
  void pass_gate();
  /// The first rank of a --rankfile whose slot list names cores its host lacks (as the host's
  /// ferryd reported its sockets), as one line naming file, line and host; "" when all fit.
  std::string rank_file_misfit() const;
  std::pair<std::string, uint16_t> master_endpoint() const;
  Result<Placement> place_on(const std::vector<size_t>& members) const;
  SharedSpec shared_spec();
  /// Every member host's HostSpec frame for this attempt; an Error naming the host whose spec
  /// is over the frame limit.
  Result<std::vector<std::string>> encode_host_specs();
  void choose_network();
  void check_attempt_over();
  void end_attempt();
  /// The attempt's hosts that were not lost, and the names of those that were.
  std::vector<size_t> survivors(std::string& lost_names) const;
  void reopen_lost_hosts();
  void check_reopened();
  void finish_job();
  static std::string world_text(const Attempt& a);
  bool in_attempt(size_t i) const { return hosts_[i]->attempt_index >= 0; }

  asio::io_context& io_;
  JobOptions opts_;
  Launchers launchers_;
  OutputSink& out_;
  Diagnostics& diag_;
  OutputRouter router_{io_, [this](const std::string& line) { diag_.verbose(line); }};
  asio::signal_set signals_{io_};
  asio::signal_set passed_signals_{io_};  // SIGUSR1, SIGUSR2: forwarded, the job goes on
  asio::steady_timer start_timer_{io_}, abort_timer_{io_}, beat_timer_{io_};
  asio::steady_timer progress_timer_{io_};
  bool progress_on_ = false;  // the connecting display is up (a terminal, after a moment)
  Placement full_;            // every host: the first attempt's placement
  std::optional<Placement> placed_before_;  // ferryrun's, given to the Job: becomes full_
  std::string job_id_;
  HostLinks hosts_;    // one per host of full_, same order; a reopened host gets a new one
  HostLinks retired_;  // links of hosts that were reopened (their callbacks may still run)
  Attempt attempt_;
  Phase phase_ = Phase::kStarting;
  Clock::time_point started_at_;
  bool first_start_seen_ = false;
  bool finished_ = false;
  bool reading_paused_ = false;  // the console is behind: no link is read
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  std::unique_ptr<StdinForwarder> stdin_;
  int stdin_host_ = -1;  // the host of the stdin rank; -1 none
  std::unique_ptr<RendezvousService> rdv_;
  JobSummary summary_;  // the last attempt's ranks, for --summary
  std::optional<PendingReport> report_;
  uint32_t report_seq_ = 0;
  asio::steady_timer job_timer_{io_}, stall_timer_{io_}, report_timer_{io_};
  Clock::time_point stall_reported_at_{};
  std::optional<PendingPreflight> preflight_;
  StartGate gate_;
  struct SyncProgress {
    uint64_t wanted = 0, acked = 0;  // bytes, over every host
    size_t hosts = 0, ready = 0;
    Clock::time_point drawn{};
  } sync_progress_;
  std::shared_ptr<const SyncTree> sync_;     // the tree, once read (opts_.sync, or sync_reader_'s)
  std::unique_ptr<TreeReader> sync_reader_;  // reading opts_.sync_request while hosts are reached
  bool sync_waits_tree_ = false;             // an attempt's sync began before the tree was read
  std::string sync_offer_;                   // the encoded SyncOffer, once a host asked for it
  bool sync_told_ = false;                   // --verbose said what the tree holds
  bool sync_on_ = false;                     // an attempt waits for its hosts' copies
  asio::steady_timer preflight_timer_{io_}, sync_timer_{io_};
  std::optional<PendingCheck> check_;
  std::map<size_t, std::string> preflight_outcome_;
  asio::steady_timer check_timer_{io_};
  std::unique_ptr<FollowUp> follow_up_;  // what follows a failure
  std::unique_ptr<JobWatch> watch_;      // --report, --trace, --stragglers, --top; null: none
  std::unique_ptr<TopScreen> top_;       // --top, while the view is up
};

}  // namespace ferry
