#pragma once
/// \file
/// ferryd's PMI-1 server over real sockets: one AF_UNIX socketpair per
/// rank (the rank's end becomes its PMI_FD), bytes fed to a PmiHost, barriers, spawns and
/// aborts turned into frames for the front end. One PmiHost for the job's ranks, and one for
/// each process group a PMI spawn started here (its KVS and barriers its own).

#include <asio.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "ferry/common/result.hpp"
#include "ferry/rendezvous/pmi_host.hpp"
#include "ferry/wire/messages.hpp"

namespace ferry {

/// The PMI-1 server's view of a host's spec: the job id as kvsname, the world, the process
/// mapping, and each local rank with its MPMD part (its appnum).
PmiHostConfig pmi_host_config_of(const wire::HostSpec& spec);

class PmiProxy {
 public:
  struct Events {
    /// A frame for the front end (kPmiBarrier, kPmiAbort, kFailure).
    std::function<void(std::string frame)> send;
    /// `rank`'s PMI socket is closed for good (ferryd may now report its exit).
    std::function<void(int rank)> closed;
  };

  PmiProxy(asio::io_context& io, PmiHostConfig config, Events events);
  ~PmiProxy();
  PmiProxy(const PmiProxy&) = delete;
  PmiProxy& operator=(const PmiProxy&) = delete;

  /// Makes `rank`'s socketpair and returns the child's end (close-on-exec: pass it in
  /// SpawnRequest::keep_fds), or why it could not.
  Result<int> open_rank(int rank);
  /// The rank was forked: close the child's end here and start serving ferryd's end.
  void spawned(int rank);
  /// The rank could not be started: close both ends, quietly.
  void drop(int rank);
  /// The front end's kPmiBarrierDone (for the group it names). An Error if no such barrier
  /// is pending.
  Status barrier_done(const wire::PmiBarrier& b);
  /// The front end's answer to a rank's spawn.
  void spawn_done(const wire::PmiSpawnDone& m);

  /// Where a process of a spawned group stands in it.
  struct Member {
    int rank = 0;                   ///< in its group (PMI_RANK)
    int size = 0;                   ///< of its group (PMI_SIZE)
    int local = 0, local_size = 0;  ///< among the group's processes on this host
  };
  /// A PMI spawn's processes here: their group is served from now on (its KVS seeded with the
  /// preput pairs); open_rank() then makes their sockets. An Error for a group already here.
  Status add_group(const wire::PmiSpawnJob& m);
  /// The place of the job's process `rank` in a spawned group here; nothing for the job's
  /// own ranks and processes of no group here.
  std::optional<Member> member(int rank) const;
  /// Whether ferryd's end of `rank`'s socket is still open.
  bool is_open(int rank) const;
  /// Closes `rank`'s socket as if the rank had closed it (its exit was reported while a
  /// descendant still held the socket).
  void close_rank(int rank);

 private:
  struct Socket;
  void read(int rank, Socket& s);
  void write(int rank, std::string bytes);
  void write_next(int rank, Socket& s);
  void finish(int rank, Socket& s);

  PmiHostEvents host_events(const std::string& kvsname);
  PmiHost* host_of(int rank) const;

  asio::io_context& io_;
  Events events_;
  std::map<int, std::unique_ptr<Socket>> sockets_;
  std::unique_ptr<PmiHost> host_;  // the job's ranks
  struct Group {
    std::unique_ptr<PmiHost> host;
    std::map<int, Member> members;  // by the job's number for the process
  };
  std::map<std::string, Group, std::less<>> groups_;  // spawned, by KVS name
  std::map<int, std::string> group_of_;               // a spawned process's group
};

}  // namespace ferry
