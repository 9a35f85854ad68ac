#pragma once
/// \file
/// The rounds of an elastic Horovod job (horovodrun --host-discovery-script), as horovod's
/// `runner/elastic/{driver,registration,discovery}.py` run them, without threads: which hosts
/// are known and blacklisted, which slot holds which rank, and when a round of resets is
/// complete. Pure: the job feeds it what it hears and does what it answers.
///
/// A round: every worker of the current world reports once, as READY (it asked
/// `GET /rank_and_size/<host>:<local_rank>` after a reset), SUCCESS (exited 0) or FAILURE
/// (exited otherwise, or its host was lost). When all have, the round ends: the job stops
/// (a worker succeeded, all failed, every host is blacklisted, --reset-limit reached), or the
/// hosts of failed workers are blacklisted and the world is assigned again, oldest hosts
/// first, so that surviving workers keep their slot and rank 0 keeps its state.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ferry/common/result.hpp"

namespace ferry {

/// One worker's place: a host and a local rank on it.
struct ElasticSlot {
  std::string host;
  int local_rank = 0;
  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 misreads a defaulted <=>
  auto operator<=>(const ElasticSlot&) const = default;
};

/// A slot's coordinates in one world (horovod's SlotInfo).
struct ElasticAssignment {
  std::string host;
  int rank = -1;
  int size = -1;
  int local_rank = -1;
  int local_size = -1;
  int cross_rank = -1;
  int cross_size = -1;
  /// The body of a rank_and_size answer: "rank,size,local_rank,local_size,cross_rank,cross_size";
  /// "-1,-1,-1,-1,-1,-1" for a slot that is not in the world.
  std::string response() const;
};

/// A discovered host and its slots.
struct DiscoveredHost {
  std::string name;
  int slots = 1;
  bool operator==(const DiscoveredHost&) const = default;
};

/// Parses a discovery script's output: one `host` or `host:slots` per line (blank lines
/// skipped, a repeated host counted once); `default_slots` for lines without slots. An Error
/// names the bad line.
Result<std::vector<DiscoveredHost>> parse_discovered_hosts(const std::string& output,
                                                           int default_slots);

/// Ranks in host order, each host's slots filled in turn, at most `max_np` (0: no cap).
std::vector<ElasticAssignment> elastic_assignments(const std::vector<DiscoveredHost>& hosts,
                                                   int max_np);

/// What a worker reported in the current round.
enum class WorkerState { kReady, kSuccess, kFailure };

/// How a round ended.
enum class RoundEnd {
  kResume,          ///< the job goes on: assign the world again (resume())
  kSucceeded,       ///< a worker exited 0: the job is over
  kAllFailed,       ///< every worker failed
  kAllBlacklisted,  ///< every host of the world was blacklisted
  kResetLimit,      ///< --reset-limit resets done already
};

/// Bits of horovod's HostUpdateResult.
enum HostUpdate : int { kNoUpdate = 0, kHostsRemoved = 1, kHostsAdded = 2 };

class ElasticRounds {
 public:
  struct Limits {
    int min_np = 1;
    int max_np = 0;                               ///< 0: no cap
    int reset_limit = -1;                         ///< -1: none
    int cooldown_low_s = 0, cooldown_high_s = 0;  ///< 0 0: blacklisted for good
  };
  explicit ElasticRounds(Limits limits) : limits_(limits) {}

  /// The discovery script's latest list, at time `now_s`. Returns HostUpdate bits as horovod's
  /// HostManager.update_available_hosts does (a host back from its cooldown counts as added).
  int update_hosts(const std::vector<DiscoveredHost>& hosts, double now_s);
  /// Slots of the hosts that are not blacklisted.
  int available_slots() const;
  /// Assigns the world over the available hosts (the job's start, and after a kResume round).
  /// An Error when they have fewer than min_np slots (the caller waits for more) or when no
  /// host of the previous world is left (nobody could hand the state over).
  Result<std::vector<ElasticAssignment>> assign();

  /// Whether assign() would now give another world than the current one (horovod notifies
  /// rank 0 of a host change only then).
  bool would_reassign() const;

  /// Records `state` for `slot`. A slot outside the world is ignored; a second report of one
  /// slot counts only when it is a FAILURE (a worker that died while waiting). True when every
  /// worker of the world has now reported: call end_round().
  bool record(const ElasticSlot& slot, WorkerState state);
  /// Whether a worker of the current round exited 0 (SUCCESS).
  bool succeeded() const { return count(WorkerState::kSuccess) > 0; }
  /// Decides the round that just completed (blacklisting the hosts of failed workers).
  RoundEnd end_round(double now_s);
  /// Hosts blacklisted by the last end_round().
  const std::vector<std::string>& newly_blacklisted() const { return newly_blacklisted_; }

  /// `slot`'s coordinates in the current world; nullopt when it is not in it.
  std::optional<ElasticAssignment> assignment(const ElasticSlot& slot) const;
  const std::vector<ElasticAssignment>& world() const { return world_; }
  bool blacklisted(const std::string& host) const;
  /// Whether `host` is blacklisted with a cooldown that is over at `now_s`: the next
  /// update_hosts() that lists it takes it back (as a new host).
  bool cooldown_over(const std::string& host, double now_s) const;
  int resets() const { return resets_; }
  const Limits& limits() const { return limits_; }

 private:
  struct HostState {
    bool blacklisted = false;
    int times = 0;
    double cooldown_end = 0;
  };
  HostState& state(const std::string& host);
  /// `host`'s state, or nullptr when it never had one.
  const HostState* find_state(const std::string& host) const;
  int count(WorkerState s) const;
  std::vector<ElasticAssignment> next_world() const;

  Limits limits_;
  std::vector<DiscoveredHost> discovered_;
  std::vector<std::string> order_;  // assignment order: oldest first
  std::vector<std::pair<std::string, HostState>> states_;
  std::vector<ElasticAssignment> world_;
  std::vector<std::pair<ElasticSlot, WorkerState>> recorded_;
  std::vector<std::string> newly_blacklisted_;
  int resets_ = 0;
};

}  // namespace ferry
