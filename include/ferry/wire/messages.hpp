#pragma once
/// \file
/// The messages ferryrun and ferryd exchange. Each message is one struct that names its
/// type and lists its fields once (`fields()`); that one list drives both its encoder and
/// its decoder (see schema.hpp). Bump kProtocolVersion whenever a message changes shape;
/// each side refuses a peer of another version.
///
/// Both directions decode into one std::variant (ToDaemon, ToFront), which the two
/// programs dispatch with std::visit: a message one side does not handle does not compile.

#include <concepts>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <variant>
#include <vector>

#include "ferry/binding/options.hpp"
#include "ferry/common/result.hpp"
#include "ferry/wire/frame.hpp"

namespace ferry::wire {

inline constexpr uint32_t kProtocolVersion = 23;
/// Starts every Hello so a foreign or garbled stream is told apart from a version mismatch.
inline constexpr char kMagic[] = "FERRY\x01";

enum class MsgType : uint8_t {
  kHello = 1,              ///< d→f, first frame: who and what version
  kHostSpec = 2,           ///< f→d: this host's part of the job
  kStarted = 3,            ///< d→f: a rank was forked
  kOutput = 4,             ///< d→f: bytes of a rank's stdout/stderr
  kExited = 5,             ///< d→f: a rank ended
  kStdin = 6,              ///< f→d: bytes for the stdin rank; empty = EOF
  kSignal = 7,             ///< f→d: deliver a signal to every rank
  kTerminate = 8,          ///< f→d: SIGTERM all, SIGKILL after the grace period (0 = now)
  kDone = 9,               ///< d→f: every rank reaped; ferryd exits, or waits (keep_serving)
  kFailure = 10,           ///< d→f: a rank or the host failed outside the rank's own code
  kLog = 11,               ///< d→f: a diagnostic line for the user
  kHeartbeat = 12,         ///< both ways, every HostSpec::heartbeat_ms while a job runs
  kKvRequest = 13,         ///< d→f: a rank's Horovod KV request (already authenticated)
  kKvReply = 14,           ///< f→d: the store's answer to one kKvRequest
  kPmiBarrier = 15,        ///< d→f: every local rank entered PMI barrier `epoch`; its puts
  kPmiBarrierDone = 16,    ///< f→d: every host's puts of barrier `epoch`; release the ranks
  kPmiAbort = 17,          ///< d→f: a rank called PMI abort: abort the job with its code
  kStdinAck = 18,          ///< d→f: this many kStdin bytes were written to the rank or dropped
  kStartRanks = 19,        ///< f→d: more ranks for the running job (elastic: new slots here)
  kStopRanks = 20,         ///< f→d: stop these ranks; the job goes on (elastic: slots removed)
  kOutputRoute = 21,       ///< f→d: send your frames over a sealed connection back to ferryrun
  kPmixFence = 22,         ///< d→f: every local rank entered PMIx fence `seq`; their data
  kPmixFenceDone = 23,     ///< f→d: every host's data of fence `seq`; release the ranks
  kPmixModexRequest = 24,  ///< both: a rank's PMIx data is wanted (d→f asks, f→d forwards)
  kPmixModexReply = 25,    ///< both: the answer to one kPmixModexRequest
  kStateRequest = 26,      ///< f→d: report the state and stack of every running rank
  kStateReport = 27,       ///< d→f: the answer to one kStateRequest
  kPreflight = 28,         ///< f→d: listen for, or connect to, the data network's preflight
  kPreflightResult = 29,   ///< d→f: how the preflight went on this host
  kCheckRequest = 30,      ///< f→d: ferryrun --check: describe this host
  kCheckReport = 31,       ///< d→f: the answer to kCheckRequest
  kPmixStart = 32,         ///< f→d: start the PMIx server now, before the HostSpec
  kSyncOffer = 33,         ///< f→d: the job's synced tree, before the HostSpec (--sync)
  kSyncNeed = 34,          ///< d→f: the tree's files this host's cache lacks, or why it can't
  kSyncData = 35,          ///< f→d: the next bytes of one of them
  kSyncAck = 36,           ///< d→f: this many kSyncData bytes are written (the sender's window)
  kSyncReady = 37,         ///< d→f: the job's copy of the tree is in place, or why not
  kSyncProbe = 38,         ///< f→d: the tree's digest: is a spare copy of it here, untouched?
  kPmixPublish = 39,       ///< d→f: a rank publishes names (MPI_Publish_name, connect/accept)
  kPmixLookup = 40,        ///< d→f: a rank looks names up, maybe waiting for them
  kPmixUnpublish = 41,     ///< d→f: a rank removes names it published
  kPmixNames = 42,         ///< f→d: the answer to one kPmixPublish, kPmixLookup or kPmixUnpublish
  kPmixGroupOp = 43,       ///< d→f: local ranks entered a PMIx connect, disconnect or fence
  kPmixGroupDone = 44,     ///< f→d: every host of that operation reported: release them
  kPmixSpawn = 45,         ///< d→f: a rank calls MPI_Comm_spawn: start these processes
  kPmixSpawnDone = 46,     ///< f→d: the answer to one kPmixSpawn: the children's namespace
  kPmixSpawnJob = 47,      ///< f→d: spawned processes: register their namespace, start those here
  kSamples = 48,           ///< d→f: what the running ranks use now (HostSpec::sample_ms)
  kPmiSpawn = 49,          ///< d→f: a rank calls PMI_Spawn_multiple (MPICH's MPI_Comm_spawn)
  kPmiSpawnDone = 50,      ///< f→d: the answer to one kPmiSpawn
  kPmiSpawnJob = 51,       ///< f→d: a PMI spawn's processes here: their group, start them
};

/// The fixed bytes that open a Hello (kMagic without its NUL).
struct Magic {};

/// First frame from ferryd. Its magic and version fields keep their place in every version.
struct Hello {
  static constexpr MsgType kType = MsgType::kHello;
  uint32_t version = kProtocolVersion;
  std::string hostname;
  int32_t pid = 0;
  uint16_t free_port = 0;  ///< a TCP port that was free on this host (MASTER_PORT default)
  uint16_t kv_port = 0;    ///< where ferryd's KV proxy listens on 127.0.0.1 (0: none)
  std::vector<std::string> interfaces;  ///< interfaces_to_lines() of this host
  /// The allowed cores of each socket, in topology order (a rank file's slot lists are
  /// checked against them before any rank starts); empty: ferryd has no topology.
  std::vector<uint32_t> socket_cores;
  template <class M>
  static auto fields(M& m) {
    static Magic magic;
    return std::tie(magic, m.version, m.hostname, m.pid, m.free_port, m.kv_port, m.interfaces,
                    m.socket_cores);
  }
};

/// One rank to start: its global rank and the variables that differ per rank ("K=V").
struct RankLaunch {
  int32_t rank = 0;
  std::vector<std::string> env;
  std::vector<std::string> extra_args;  ///< appended to HostSpec::argv (--local-rank=N)
  /// An MPMD job's rank: its part's command (instead of HostSpec::argv; extra_args still
  /// follow), its part's working directory ("" = the spec's) and the part's index.
  std::vector<std::string> argv{};
  std::string wdir{};
  uint32_t app = 0;
  /// A process MPI_Comm_spawn started (`rank` is then the job's number for it, past the
  /// world's ranks): its PMIx namespace and its rank there; "" for the job's own ranks.
  std::string pmix_nspace{};
  int32_t pmix_rank = 0;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.rank, m.env, m.extra_args, m.argv, m.wdir, m.app, m.pmix_nspace, m.pmix_rank);
  }
};

/// A host's part of the job.
struct HostSpec {
  static constexpr MsgType kType = MsgType::kHostSpec;
  uint32_t version = kProtocolVersion;
  std::string job_id;
  std::string wdir;               ///< "" = ferryd's own working directory
  std::vector<std::string> argv;  ///< the command, argv[0] looked up in the rank's PATH
  std::vector<std::string> env;   ///< job-wide "K=V" applied over ferryd's environment
  std::vector<RankLaunch> ranks;
  int32_t stdin_rank = -1;        ///< rank that receives Stdin bytes; -1 = none
  uint32_t kill_grace_ms = 5000;  ///< SIGTERM→SIGKILL when ferryrun is gone
  bool verbose = false;
  bool wdir_fallback = false;       ///< wdir missing on this host: use $HOME (default wdir)
  uint32_t heartbeat_ms = 0;        ///< >0: heartbeats both ways; 3 missed = peer lost
  std::string secret;               ///< job secret the KV proxy requires of its clients
  bool pmi = false;                 ///< serve PMI-1: PMI_FD and friends for each rank
  int32_t world_size = 0;           ///< PMI_SIZE
  std::string pmi_process_mapping;  ///< value of the PMI key PMI_process_mapping
  BindingOptions binding;           ///< cores and devices per rank (binding part)
  uint32_t attempt = 0;             ///< 0 for the first run of the job, then 1, 2, ...
  /// After Done, wait for the next attempt's HostSpec (or EOF) instead of exiting: the job
  /// may restart over this same connection.
  bool keep_serving = false;
  /// Give each rank a TORCHELASTIC_ERROR_FILE and send what a failed rank wrote there with
  /// its Exited.
  bool error_files = false;
  /// The ranks are Horovod processes (the job was started as horovodrun): a host whose own
  /// name Horovod's gloo cannot use fails them before they start; otherwise ferryd only
  /// warns (see own_name.hpp).
  bool horovod = false;
  /// PMIx (Open MPI's runtime): the name of every host of the attempt as its ferryd reported
  /// it (Hello::hostname), in placement order, and this host's index there. Empty: no PMIx.
  std::vector<std::string> node_names;
  uint32_t node_index = 0;
  /// The placement index of every global rank's host (world_size entries).
  std::vector<uint32_t> node_of_rank;
  /// "NAME=DIR": DIR goes first on each rank's NAME, over this host's own value, after
  /// everything else (mpirun --prefix P: P/bin on PATH, P/lib on LD_LIBRARY_PATH).
  std::vector<std::string> path_prepends;
  /// An MPMD job: the ranks of each part, in part order (PMIx's app sizes and leaders);
  /// empty: one program on every rank.
  std::vector<uint32_t> app_sizes;
  /// >0: sample the running ranks this often and send Samples (the job's view); 0: never.
  uint32_t sample_ms = 0;
  /// MPI_UNIVERSE_SIZE (PMI-1's universe size, PMIx's PMIX_UNIV_SIZE): the processes the job
  /// may have at once, the slots of the hosts that run its ranks (MPI_Comm_spawn's room);
  /// 0: world_size.
  int32_t universe_size = 0;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.version, m.job_id, m.wdir, m.argv, m.env, m.ranks, m.stdin_rank,
                    m.kill_grace_ms, m.verbose, m.wdir_fallback, m.heartbeat_ms, m.secret, m.pmi,
                    m.world_size, m.pmi_process_mapping, m.binding, m.attempt, m.keep_serving,
                    m.error_files, m.horovod, m.node_names, m.node_index, m.node_of_rank,
                    m.path_prepends, m.app_sizes, m.sample_ms, m.universe_size);
  }
};

struct Started {
  static constexpr MsgType kType = MsgType::kStarted;
  int32_t rank = 0;
  int32_t pid = 0;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.rank, m.pid);
  }
};

/// The most of a rank's error file that travels with its Exited.
inline constexpr size_t kErrorFileLimit = size_t{64} * 1024;

/// Bytes in front of the data of an Output frame: length, type, rank, stream, data length.
inline constexpr size_t kOutputHeader = 4 + 1 + 4 + 1 + 4;

/// Writes the header of an Output frame carrying `n` data bytes: the one place that lays
/// it out (encode(Output) and FrameBatch both use it).
void write_output_header(std::span<char, kOutputHeader> out, int32_t rank, uint8_t stream,
                         size_t n);

/// A rank's output. Encoded by encode(); decoded as OutputView, whose data still lies in
/// the frame it came in: the hot path of a job's output copies nothing.
struct Output {
  static constexpr MsgType kType = MsgType::kOutput;
  int32_t rank = 0;
  uint8_t stream = 1;  ///< 1 stdout, 2 stderr
  std::string data;
};

struct OutputView {
  static constexpr MsgType kType = MsgType::kOutput;
  int32_t rank = 0;
  uint8_t stream = 1;  ///< 1 stdout, 2 stderr
  std::string_view data;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.rank, m.stream, m.data);
  }
};

/// How a rank ended: `signal` != 0 means killed by that signal, else `exit_code`.
struct Exited {
  static constexpr MsgType kType = MsgType::kExited;
  int32_t rank = 0;
  int32_t exit_code = 0;
  int32_t signal = 0;
  /// A failed rank's TORCHELASTIC_ERROR_FILE as it wrote it (at most kErrorFileLimit bytes);
  /// "" none.
  std::string error_file;
  /// What the rank used, for --summary: wall time from its start to its reaping, the CPU
  /// time of it and its reaped children (user + system), its peak resident set. 0: unknown.
  uint32_t wall_ms = 0;
  uint32_t cpu_ms = 0;
  uint32_t max_rss_kb = 0;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.rank, m.exit_code, m.signal, m.error_file, m.wall_ms, m.cpu_ms, m.max_rss_kb);
  }
};

struct Failure {
  static constexpr MsgType kType = MsgType::kFailure;
  int32_t rank = -1;  ///< -1: the host as a whole
  std::string message;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.rank, m.message);
  }
};

/// A Horovod KV request carried from a rank through its ferryd to the front end's store.
struct KvRequest {
  static constexpr MsgType kType = MsgType::kKvRequest;
  uint32_t id = 0;  ///< ferryd's number for it; echoed in the reply
  std::string method;
  std::string target;
  std::string body;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.id, m.method, m.target, m.body);
  }
};

struct KvReply {
  static constexpr MsgType kType = MsgType::kKvReply;
  uint32_t id = 0;
  uint16_t status = 200;
  std::string body;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.id, m.status, m.body);
  }
};

/// d→f: this host's PMI puts since the previous barrier; every local rank entered barrier
/// `epoch`. `keys` and `values` have equal length. `kvsname`: the process group's, "" for the
/// job's own ranks (a PMI spawn's processes barrier among themselves, under their KVS name).
struct PmiBarrier {
  static constexpr MsgType kType = MsgType::kPmiBarrier;
  uint32_t epoch = 0;
  std::vector<std::string> keys;
  std::vector<std::string> values;
  std::string kvsname{};
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.epoch, m.keys, m.values, m.kvsname);
  }
};

/// f→d: the puts of every host for barrier `epoch`; release the ranks.
struct PmiBarrierDone : PmiBarrier {
  static constexpr MsgType kType = MsgType::kPmiBarrierDone;
};

/// A rank called PMI abort (MPI_Abort).
struct PmiAbort {
  static constexpr MsgType kType = MsgType::kPmiAbort;
  int32_t rank = 0;
  int32_t exit_code = 1;
  std::string message;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.rank, m.exit_code, m.message);
  }
};

/// Bytes for the stdin rank; empty means EOF.
struct Stdin {
  static constexpr MsgType kType = MsgType::kStdin;
  std::string data;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.data);
  }
};

struct Signal {
  static constexpr MsgType kType = MsgType::kSignal;
  int32_t signo = 0;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.signo);
  }
};

struct Terminate {
  static constexpr MsgType kType = MsgType::kTerminate;
  uint32_t grace_ms = 0;  ///< 0: SIGKILL now
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.grace_ms);
  }
};

/// Every rank of the attempt reaped and swept.
struct Done {
  static constexpr MsgType kType = MsgType::kDone;
  uint16_t free_port = 0;  ///< a TCP port free on this host now (the next MASTER_PORT)
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.free_port);
  }
};

struct Log {
  static constexpr MsgType kType = MsgType::kLog;
  std::string line;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.line);
  }
};

struct Heartbeat {
  static constexpr MsgType kType = MsgType::kHeartbeat;
  template <class M>
  static auto fields(M&) {
    return std::tie();
  }
};

struct StdinAck {
  static constexpr MsgType kType = MsgType::kStdinAck;
  uint32_t bytes = 0;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.bytes);
  }
};

/// Ranks that join the job running on this host, after its HostSpec: each is started as the
/// spec's own ranks are (its command, the job's environment, then the rank's), and reported
/// the same way (Started, Output, Exited). Not with PMI: its world is fixed.
struct StartRanks {
  static constexpr MsgType kType = MsgType::kStartRanks;
  std::vector<RankLaunch> ranks;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.ranks);
  }
};

/// Ranks of this host to stop while the others go on: SIGTERM to each one's process group,
/// SIGKILL after `grace_ms` (0: now). Each still ends with its Exited; a rank not started yet
/// never starts (its Exited says SIGKILL); a rank that already ended, or is not here, is skipped.
struct StopRanks {
  static constexpr MsgType kType = MsgType::kStopRanks;
  std::vector<int32_t> ranks;
  uint32_t grace_ms = 0;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.ranks, m.grace_ms);
  }
};

/// Where ferryd may send its frames instead of its stdout (the SSH channel): a TCP connection
/// back to ferryrun, opened with the connect-back handshake under `secret` with `token` as the
/// node name, then sealed (AES-128-GCM records, transport/sealed_records.hpp). ferryd tries
/// the addresses in order; if none answers, its frames stay on stdout.
struct OutputRoute {
  static constexpr MsgType kType = MsgType::kOutputRoute;
  std::vector<std::string> addresses;
  uint16_t port = 0;
  std::string secret;
  std::string token;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.addresses, m.port, m.secret, m.token);
  }
};

}  // namespace ferry::wire

// The messages that diagnose a job before and while it runs (the preflight, --check, the state
// report), the samples of the job's view, PMIx's and --sync's: in headers of their own, which need
// MsgType above.
#include "ferry/wire/diagnosis_messages.hpp"  // IWYU pragma: export
#include "ferry/wire/monitor_messages.hpp"    // IWYU pragma: export
#include "ferry/wire/pmi_spawn_messages.hpp"  // IWYU pragma: export
#include "ferry/wire/pmix_messages.hpp"       // IWYU pragma: export
#include "ferry/wire/sync_messages.hpp"       // IWYU pragma: export

namespace ferry::wire {

/// What ferryd may receive.
using ToDaemon =
    std::variant<HostSpec, Stdin, Signal, Terminate, Heartbeat, KvReply, PmiBarrierDone, StartRanks,
                 StopRanks, OutputRoute, PmixFenceDone, PmixModexRequest, PmixModexReply,
                 StateRequest, Preflight, CheckRequest, PmixStart, SyncProbe, SyncOffer, SyncData,
                 PmixNames, PmixGroupDone, PmixSpawnDone, PmixSpawnJob, PmiSpawnDone, PmiSpawnJob>;
/// What ferryrun may receive once a host said Hello (Hello is decoded on its own first).
using ToFront =
    std::variant<OutputView, Started, Exited, Failure, Log, Heartbeat, KvRequest, PmiBarrier,
                 PmiAbort, StdinAck, Done, PmixFence, PmixModexRequest, PmixModexReply, StateReport,
                 PreflightResult, CheckReport, SyncNeed, SyncAck, SyncReady, PmixPublish,
                 PmixLookup, PmixUnpublish, PmixGroupOp, PmixSpawn, Samples, PmiSpawn>;

/// One frame of message `M`.
template <class M>
std::string encode(const M& m);
std::string encode(const Output& m);

/// Where the fixed part of every Hello begins in its frame: after the frame's length.
inline constexpr size_t kHelloGreetingOffset = 4;
/// The fixed part itself: the frame's type, kMagic and kProtocolVersion, the bytes a ferryd
/// of this protocol writes first after its frame's length, whatever its other fields hold.
/// ferryrun knows an installed ferryd that speaks its protocol by them (`ShipPlan::greeting`).
std::string hello_greeting();

/// Decodes a frame that must be an `M`. A Hello from a foreign stream or another protocol
/// version, and a HostSpec of another version, are Errors naming both versions.
template <class M>
Result<M> decode(const FrameView& f);
template <class M>
Result<M> decode(const Frame& f) {
  return decode<M>(FrameView{f.type, f.payload});
}
/// An OutputView would point into a frame about to vanish.
template <class M>
requires std::same_as<M, OutputView> Result<M> decode(const Frame&& f)
= delete;

/// Decodes any frame ferryd may receive; another type is an Error naming it.
Result<ToDaemon> decode_to_daemon(const FrameView& f);
/// Decodes any frame ferryrun may receive after Hello. OutputView's data points into `f`.
Result<ToFront> decode_to_front(const FrameView& f);

/// Builds a visitor out of lambdas, for std::visit over ToDaemon / ToFront.
template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

}  // namespace ferry::wire
