#pragma once
/// \file
/// The messages of ferryd's PMIx server (Open MPI's runtime interface; docs/design.md): its
/// start, fences over the whole namespace, direct modex, and what MPI's dynamic processes
/// need: the job's name service (publish, lookup, unpublish) and collectives over some
/// processes (connect, disconnect, fences over listed processes). Part of messages.hpp,
/// which includes it once MsgType is declared: include messages.hpp, not this file.

#include <cstdint>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

namespace ferry::wire {

/// d→f: every local rank of this host entered PMIx fence number `seq` (1, 2, ... per
/// attempt); `data` is what the host's PMIx server collected from them (opaque bytes).
struct PmixFence {
  static constexpr MsgType kType = MsgType::kPmixFence;
  uint32_t seq = 0;
  std::string data;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.seq, m.data);
  }
};

/// f→d: every host's `data` of fence `seq`, concatenated in host order: release the ranks.
struct PmixFenceDone : PmixFence {
  static constexpr MsgType kType = MsgType::kPmixFenceDone;
};

/// A rank asks for the PMIx data of rank `rank` (of `nspace`) on another host (direct modex).
/// ferryd → ferryrun: the asker's ferryd, `id` its own number; ferryrun → ferryd: forwarded
/// to the host of `rank`, `id` ferryrun's number.
struct PmixModexRequest {
  static constexpr MsgType kType = MsgType::kPmixModexRequest;
  uint32_t id = 0;
  int32_t rank = 0;
  std::string nspace{};  ///< "" the attempt's; else a namespace MPI_Comm_spawn made
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.id, m.rank, m.nspace);
  }
};

/// The answer to the PmixModexRequest with the same `id`, back the way it came: `status` is
/// a PMIx status (0 success), `data` the rank's data as its host's server packed it.
struct PmixModexReply {
  static constexpr MsgType kType = MsgType::kPmixModexReply;
  uint32_t id = 0;
  int32_t status = 0;
  std::string data;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.id, m.status, m.data);
  }
};

/// Before the first HostSpec, once this host's PMIx name is known: start the PMIx server now,
/// while the other hosts connect, rather than at the HostSpec (libpmix takes milliseconds to
/// start). `node` is the name the HostSpec's node list will give this host (its Hello hostname,
/// "#2" added when an earlier host has the same). Sent only to jobs whose ranks get PMIx.
struct PmixStart {
  static constexpr MsgType kType = MsgType::kPmixStart;
  std::string node;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.node);
  }
};

/// A process as PMIx names it; `rank` 0xfffffffe is every rank of the namespace.
struct PmixProcName {
  std::string nspace;
  uint32_t rank = 0;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.nspace, m.rank);
  }
};

/// One published name: its key, its value (`bytes`: a PMIx byte object, not a string), and
/// the process that published it.
struct PmixName {
  std::string key;
  std::string value;
  PmixProcName owner;
  bool bytes = false;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.key, m.value, m.owner, m.bytes);
  }
};

/// d→f: process `owner` publishes `names` (their owner fields unused) in the job's name
/// service; `first_read`: each is removed when first looked up. Answered by PmixNames.
struct PmixPublish {
  static constexpr MsgType kType = MsgType::kPmixPublish;
  uint32_t id = 0;
  PmixProcName owner;
  std::vector<PmixName> names;
  bool first_read = false;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.id, m.owner, m.names, m.first_read);
  }
};

/// d→f: a rank looks `keys` up; `wait`: answer once every one is published. `cancel`: the
/// lookup `id` waits no more (its PMIX_TIMEOUT ran out on the host); no answer follows.
struct PmixLookup {
  static constexpr MsgType kType = MsgType::kPmixLookup;
  uint32_t id = 0;
  std::vector<std::string> keys;
  bool wait = false;
  bool cancel = false;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.id, m.keys, m.wait, m.cancel);
  }
};

/// d→f: process `owner` removes the names `keys` it published (every one, when empty).
struct PmixUnpublish {
  static constexpr MsgType kType = MsgType::kPmixUnpublish;
  uint32_t id = 0;
  PmixProcName owner;
  std::vector<std::string> keys;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.id, m.owner, m.keys);
  }
};

/// f→d: the answer to the PmixPublish, PmixLookup or PmixUnpublish numbered `id`: a PMIx
/// status, and for a lookup the names found.
struct PmixNames {
  static constexpr MsgType kType = MsgType::kPmixNames;
  uint32_t id = 0;
  int32_t status = 0;
  std::vector<PmixName> names;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.id, m.status, m.names);
  }
};

/// d→f: every local process among `procs` entered a collective over them: `kind` 0 a fence
/// (with this host's `data`), 1 a connect, 2 a disconnect (GroupOps::Kind).
struct PmixGroupOp {
  static constexpr MsgType kType = MsgType::kPmixGroupOp;
  uint32_t id = 0;
  uint8_t kind = 0;
  std::vector<PmixProcName> procs;
  std::string data;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.id, m.kind, m.procs, m.data);
  }
};

/// f→d: every host of the PmixGroupOp numbered `id` reported: release its processes with
/// `status` and, for a fence, every host's data in host order.
struct PmixGroupDone {
  static constexpr MsgType kType = MsgType::kPmixGroupDone;
  uint32_t id = 0;
  int32_t status = 0;
  std::string data;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.id, m.status, m.data);
  }
};

/// One application of an MPI_Comm_spawn (or one command of MPI_Comm_spawn_multiple), as
/// PMIx gives it: its command, its arguments (the command first), variables to set ("K=V"),
/// its working directory ("" the parent's host's default) and how many processes.
struct PmixSpawnApp {
  std::string cmd;
  std::vector<std::string> argv;
  std::vector<std::string> env;
  std::string cwd;
  uint32_t maxprocs = 0;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.cmd, m.argv, m.env, m.cwd, m.maxprocs);
  }
};

/// d→f: process `parent` spawns `apps` (PMIx_Spawn): answered by PmixSpawnDone `id`.
/// `host_keys`: the MPI_Info keys naming hosts it carries ("host", "hostfile", "add-host",
/// "add-hostfile"), which the front end refuses.
struct PmixSpawn {
  static constexpr MsgType kType = MsgType::kPmixSpawn;
  uint32_t id = 0;
  PmixProcName parent;
  std::vector<PmixSpawnApp> apps;
  std::vector<std::string> host_keys{};
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.id, m.parent, m.apps, m.host_keys);
  }
};

/// f→d: the children of PmixSpawn `id` are on their way as namespace `nspace` (status 0), or
/// why not (a PMIx status).
struct PmixSpawnDone {
  static constexpr MsgType kType = MsgType::kPmixSpawnDone;
  uint32_t id = 0;
  int32_t status = 0;
  std::string nspace;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.id, m.status, m.nspace);
  }
};

/// f→d, to every host of the job: processes MPI_Comm_spawn started form namespace `nspace`
/// (its rank r on host index node_of_rank[r]; `app_sizes` its applications' sizes): register
/// it, and start `ranks`, the ones on this host (RankLaunch with pmix_nspace set).
struct PmixSpawnJob {
  static constexpr MsgType kType = MsgType::kPmixSpawnJob;
  std::string nspace;
  std::vector<uint32_t> node_of_rank;
  std::vector<uint32_t> app_sizes;
  std::vector<RankLaunch> ranks;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.nspace, m.node_of_rank, m.app_sizes, m.ranks);
  }
};

/// What MPI's dynamic processes ask of the front end (one handler takes them all).
using PmixDynamic = std::variant<PmixPublish, PmixLookup, PmixUnpublish, PmixGroupOp>;

}  // namespace ferry::wire
