#pragma once
// Private to src/frontend/: what follows a failure. The hub (Job::Impl) runs hosts and attempts;
// at each event that can end or change an attempt it asks its FollowUp, one of two:
//   - RestartAttempts (job_restart.cpp): an attempt runs to its end; then the job ends, or runs
//     again over the same connections (lost hosts opened again), or goes on without a lost host
//     (--max-restarts, --min-hosts, --min-ranks: RestartPolicy decides).
//   - HorovodElastic (job_elastic.cpp, job_elastic_hosts.cpp): horovodrun's elastic mode, one
//     attempt for the whole job whose workers reset in rounds, hosts found by a discovery script
//     (or the fixed -H hosts) joining and leaving while it runs.
// Both are nested in Job::Impl: they act on the hub's hosts and attempt.

#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "ferry/frontend/restart_policy.hpp"
#include "ferry/rendezvous/elastic_rounds.hpp"
#include "ferry/rendezvous/horovod_notice.hpp"
#include "job_impl.hpp"

namespace ferry {

class Job::Impl::FollowUp {
 public:
  FollowUp() = default;
  virtual ~FollowUp() = default;
  FollowUp(const FollowUp&) = delete;
  FollowUp& operator=(const FollowUp&) = delete;
  FollowUp(FollowUp&&) = delete;
  FollowUp& operator=(FollowUp&&) = delete;

  /// The job starts: what follows a failure, for --verbose.
  virtual void announce() {}
  /// The first attempt is placed; its hosts are about to be sent their part.
  virtual void begin() {}
  /// Whether hosts are opened and join while the attempt runs; none is wanted once it stops.
  virtual bool adds_hosts() const { return false; }
  virtual bool stopping() const { return false; }
  /// A host opened while the attempt runs said Hello: true when it was taken here.
  virtual bool host_ready(size_t /*i*/) { return false; }
  /// Whether host `i` is opened and waits to be given ranks (its ferryd, without a HostSpec, sends
  /// no heartbeat: its silence says nothing).
  virtual bool standing_by(size_t /*i*/) const { return false; }
  /// A key-value request answered here (true), or by the attempt's store (false).
  virtual bool kv(size_t /*i*/, const wire::KvRequest& /*q*/) { return false; }
  /// A rank's exit, counted by the hub: true when this decides what it means, false for the
  /// hub's attempt rules (a failure ends the attempt).
  virtual bool exited(size_t /*i*/, const wire::Exited& /*e*/) { return false; }
  /// Host `i` is lost: true when this counts its ranks still running (the hub does not).
  virtual bool host_lost(size_t /*i*/) { return false; }
  /// The job must stop (a signal, a time limit, a console gone): true when this stops it.
  virtual bool stop_job() { return false; }
  /// Every host of the attempt is done or lost.
  virtual void attempt_done() {}
  /// Whether another attempt may follow: a host's ferryd then stays connected after its ranks
  /// ended, and the ranks are told they may be restarted.
  virtual bool restartable() const { return false; }
  /// Restarts used so far.
  virtual int restarts() const { return 0; }
  /// The attempt is over: the next attempt, or the job's end.
  virtual void after_attempt() = 0;
  /// Hosts opened again answered (or failed): whether `hosts` of the job's `all_hosts`, with
  /// `ranks` ranks, may run the next attempt, and how it is announced.
  virtual bool may_restart(int /*hosts*/, int /*ranks*/, int /*all_hosts*/) { return false; }
  virtual std::string restart_text() const { return "restarting"; }
};

class Job::Impl::RestartAttempts final : public Job::Impl::FollowUp {
 public:
  RestartAttempts(Job::Impl& job, RestartLimits limits) : job_(job), policy_(limits) {}

  void announce() override;
  bool restartable() const override { return policy_.enabled(); }
  int restarts() const override { return policy_.restarts(); }
  void after_attempt() override;
  bool may_restart(int hosts, int ranks, int all_hosts) override;
  std::string restart_text() const override;

 private:
  Job::Impl& job_;
  RestartPolicy policy_;
};

class Job::Impl::HorovodElastic final : public Job::Impl::FollowUp {
 public:
  explicit HorovodElastic(Job::Impl& job) : job_(job) {}
  ~HorovodElastic() override {
    if (discovery_thread_.joinable()) discovery_thread_.join();
  }
  HorovodElastic(const HorovodElastic&) = delete;
  HorovodElastic& operator=(const HorovodElastic&) = delete;
  HorovodElastic(HorovodElastic&&) = delete;
  HorovodElastic& operator=(HorovodElastic&&) = delete;

  void begin() override;
  bool adds_hosts() const override { return true; }
  bool stopping() const override { return stopping_; }
  bool host_ready(size_t i) override;
  bool standing_by(size_t i) const override;
  bool kv(size_t i, const wire::KvRequest& q) override;
  bool exited(size_t i, const wire::Exited& e) override;
  bool host_lost(size_t i) override;
  bool stop_job() override;
  void attempt_done() override;
  void after_attempt() override;

 private:
  // A worker's request for its next rank, waiting for the round's end.
  struct SlotQuery {
    size_t host = 0;
    uint32_t id = 0;
    ElasticSlot slot;
  };

  // ---- job_elastic.cpp: the rounds ----
  static double now_s();
  /// Seconds before a new host that failed to open is opened again.
  static constexpr int kRetryOpenS = 30;
  ElasticSlot slot_of(size_t i, int rank) const;
  void worker_exited(size_t i, const wire::Exited& e);
  void workers_lost(size_t i);
  void record(const ElasticSlot& slot, WorkerState state);
  void round_over();
  void resume();
  void answer_queries();
  /// Tags the output of host `h`'s workers with their ranks in the current world (their
  /// output arrives under the numbers they were started with).
  void label_workers(const HostLink& h);
  /// Every host is done while a round is still open: no round can follow.
  void all_exited();
  /// No round follows: its timers, discovery and waiting answers end.
  void no_more_rounds();
  /// No round follows: the workers still running are stopped; `status` != 0 fails the job.
  void stop(int status, const std::string& why);
  // ---- job_elastic_hosts.cpp: discovery, rank 0's notification, workers on new hosts ----
  void discover_later();
  void discover();
  void discovered(Result<std::string> out);
  void worker_address(const wire::KvRequest& q);
  void notify(int update);
  void add_hosts();
  /// The last listing, as far as the rounds may use it: the hosts of the job, and a new host
  /// once its ferryd (and, with --sync, its copy of the tree) is ready; the other new hosts are
  /// opened (prepare()) and join the listing when ready. Then rank 0 is told, as discovered()
  /// did, and a round that waits for slots goes on.
  void apply_listing();
  /// Opens `d` (false: it failed to open less than kRetryOpenS ago).
  bool prepare(const DiscoveredHost& d);
  /// Whether a ferryd of the job on host `name` is connected (or being opened).
  bool link_open(const std::string& name) const;
  /// A prepared host (`standby_`, ready) takes its slots in the new world: its workers start.
  void admit(size_t i);
  void place_workers(const std::string& name, HostPlan& plan);
  HostPlan discovered_plan(const std::string& name) const;
  size_t open_discovered(HostPlan plan, const std::string& why);
  void join(size_t i);
  wire::RankLaunch launch_entry(const HostLink& h, const RankSlot& r) const;
  void resize_host(size_t m);

  Job::Impl& job_;
  std::unique_ptr<ElasticRounds> rounds_;  // from begin() on
  std::vector<SlotQuery> slot_queries_;
  bool stopping_ = false;
  int round_failure_status_ = 0;    // the current round's first failed worker's status
  bool waiting_for_slots_ = false;  // a round ended with too few slots: discovery may bring more
  asio::steady_timer timer_{job_.io_}, discovery_timer_{job_.io_};
  std::thread discovery_thread_;             // runs the discovery script; one run at a time
  std::string discovery_error_;              // the last one, said once
  std::vector<DiscoveredHost> fixed_hosts_;  // -H/--hostfile's hosts: what "discovery" finds
  std::map<ElasticSlot, WorkerAddresses> worker_addresses_;  // notification services
  std::set<int> stopped_;                      // ranks stopped because their slot left the world
  std::vector<DiscoveredHost> listed_;         // the discovery script's last listing
  std::set<std::string> admitted_;             // hosts with (or opened for) workers of the job
  std::map<std::string, size_t> standby_;      // new hosts opened before they join: their index
  std::set<std::string> ready_;                // those of them whose ferryd (and tree) is ready
  std::map<std::string, double> open_failed_;  // when a new host last failed to open
};

}  // namespace ferry
