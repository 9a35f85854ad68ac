#pragma once
/// \file
/// ferryd's PMI-1 server for the ranks of one host. Pure logic: ferryd
/// feeds each rank's PMI_FD bytes in and writes the replies out; the KV exchange with other
/// hosts is one message per host per barrier, through the front end's PmiJob.
///
/// Commands answered locally: init, get_maxes, get_appnum, get_my_kvsname,
/// get_universe_size, put (buffered), get (from this host's copy), finalize. barrier_in is
/// held until every local rank entered it; then `barrier_ready` carries this host's new
/// puts to the front end, and barrier_complete() with everyone's puts releases the ranks.
/// `mcmd=spawn` (PMI_Spawn_multiple: MPICH's MPI_Comm_spawn) is gathered whole, one block
/// per command, and handed on (`spawn`); spawn_done() answers it. publish/unpublish/
/// lookup_name are refused with rc != 0. `cmd=abort exitcode=N` aborts the job with N.
///
/// One PmiHost serves one process group: the job's world, or the processes one spawn
/// started (their own KVS, seeded with the spawner's preput pairs, and their own barriers).

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/common/result.hpp"
#include "ferry/rendezvous/kv_store.hpp"
#include "ferry/rendezvous/pmi_wire.hpp"

namespace ferry {

/// One key-value pair of the job's PMI KVS.
struct PmiKv {
  std::string key;
  std::string value;
  bool operator==(const PmiKv&) const = default;
};

/// One command of a PMI_Spawn_multiple: `nprocs` processes of `execname` with `args`, and
/// the MPI_Info pairs given for it (MPICH passes "wdir", "path", "host", ... through).
struct PmiSpawnCommand {
  std::string execname;
  std::vector<std::string> args;
  int nprocs = 0;
  std::vector<PmiKv> info;
  bool operator==(const PmiSpawnCommand&) const = default;
};

/// What a rank asked in one PMI_Spawn_multiple: the commands, and the pairs to put into the
/// new processes' KVS before they start (MPICH's parent port name).
struct PmiSpawnRequest {
  std::vector<PmiSpawnCommand> commands;
  std::vector<PmiKv> preput;
  bool operator==(const PmiSpawnRequest&) const = default;
};

/// What a host's PMI server needs to know about the job.
struct PmiHostConfig {
  std::string kvsname = "ferry";  ///< the job's KVS name (no spaces)
  int world_size = 1;
  int universe_size = 0;  ///< 0: same as world_size
  int appnum = 0;         ///< every rank's, unless `appnums` has one for it
  /// An MPMD job: each local rank's part (PMI_Get_appnum, MPI_APPNUM), parallel to `ranks`.
  std::vector<int> appnums;
  /// Value served for the key `PMI_process_mapping` (see pmi_process_mapping());
  /// empty: that key is looked up like any other.
  std::string process_mapping;
  /// Global ranks of this host, in local-rank order.
  std::vector<int> ranks;
  /// Pairs in the KVS from the start (a spawned group's: the spawner's preput pairs).
  std::vector<PmiKv> preput;
  /// The most bytes of keys and values this host's copy of the key-value space holds, its
  /// own puts since the last barrier included: a put past it fails the rank (`failed`).
  std::size_t store_limit = kStoreLimitBytes;
};

/// What the engine asks its owner (ferryd) to do. All are called synchronously from
/// feed()/closed()/barrier_complete().
struct PmiHostEvents {
  /// Write `bytes` to `rank`'s PMI socket.
  std::function<void(int rank, std::string bytes)> reply;
  /// Every local rank entered barrier number `epoch` (1, 2, ...): send `puts` (this host's
  /// puts since the previous barrier, in order, last value per key) to the front end.
  std::function<void(uint32_t epoch, std::vector<PmiKv> puts)> barrier_ready;
  /// The rank called PMI_Abort: abort the job with `exit_code`.
  std::function<void(int rank, int exit_code, std::string message)> abort;
  /// The rank asked for new processes (its whole PMI_Spawn_multiple): start them, then
  /// answer with spawn_done(). None set: the spawn is refused at once.
  std::function<void(int rank, PmiSpawnRequest request)> spawn;
  /// The rank broke the protocol or its PMI socket closed after init and before
  /// finalize: count it as failed (`why` is one line). ferryd should close its socket.
  std::function<void(int rank, std::string why)> failed;
};

/// The PMI-1 server of one host. Non-copyable: events capture it by reference.
class PmiHost {
 public:
  PmiHost(PmiHostConfig config, PmiHostEvents events);
  ~PmiHost() = default;
  PmiHost(const PmiHost&) = delete;
  PmiHost& operator=(const PmiHost&) = delete;

  /// Bytes read from `rank`'s PMI socket. Unknown ranks are ignored.
  void feed(int rank, std::string_view bytes);
  /// `rank`'s PMI socket reached EOF or broke.
  void closed(int rank);
  /// The front end's answer to barrier `epoch`: every host's puts. Stores them and releases
  /// the local ranks waiting in that barrier. An Error if no such barrier is pending.
  Status barrier_complete(uint32_t epoch, const std::vector<PmiKv>& kvs);

  /// The answer to `rank`'s spawn: started (`why` empty) or refused, and why (one line).
  /// Ignored when `rank` is not waiting for one.
  void spawn_done(int rank, const std::string& why);

  /// Whether `rank` sent init / finalize (for exit reports).
  bool initialized(int rank) const;
  bool finalized(int rank) const;
  /// Barriers completed so far.
  uint32_t barriers_done() const { return done_epoch_; }
  /// Number of pairs in this host's copy of the KVS, and the bytes of keys and values it holds
  /// with the puts since the last barrier.
  std::size_t kvs_size() const { return kvs_.size(); }
  std::size_t bytes() const { return bytes_; }

 private:
  struct RankState {
    PmiReader reader;
    bool initialized = false;
    bool finalized = false;
    bool in_barrier = false;
    bool dead = false;      // closed, failed or aborted: nothing more is read
    PmiSpawnRequest spawn;  // the blocks of a spawn read so far
    int spawn_total = 0;    // how many blocks it has (0: none begun)
    bool in_spawn = false;  // the whole spawn went out; waiting for spawn_done()
  };
  void handle(int rank, RankState& st, const PmiCommand& c);
  void spawn_block(int rank, RankState& st, const PmiCommand& c);
  int appnum_of(int rank) const;
  void put(int rank, RankState& st, const PmiCommand& c);
  void commit(const std::vector<PmiKv>& kvs);
  void get(int rank, const PmiCommand& c);
  void enter_barrier(RankState& st);
  void handle_abort(int rank, RankState& st, const PmiCommand& c);
  void send(int rank, std::string_view cmd,
            const std::vector<std::pair<std::string, std::string>>& args);
  void fail(int rank, RankState& st, std::string why);

  PmiHostConfig config_;
  PmiHostEvents events_;
  std::map<int, RankState> ranks_;
  std::map<std::string, std::string, std::less<>> kvs_;  // everything committed
  std::vector<PmiKv> pending_;                           // local puts since last barrier
  std::map<std::string, std::size_t, std::less<>> pending_index_;
  std::size_t bytes_ = 0;    // keys and values in kvs_ and pending_
  int waiting_ = 0;          // local ranks inside barrier_in
  uint32_t sent_epoch_ = 0;  // last barrier reported to the front end
  uint32_t done_epoch_ = 0;  // last barrier completed
};

}  // namespace ferry
