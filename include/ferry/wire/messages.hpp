#pragma once
/// \file
/// The messages ferryrun and ferryd exchange, and their encoding. Bump kProtocolVersion
/// whenever a message changes shape; each side refuses a peer of another version.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/binding/options.hpp"
#include "ferry/common/result.hpp"
#include "ferry/wire/frame.hpp"

namespace ferry::wire {

inline constexpr uint32_t kProtocolVersion = 3;
/// Starts every Hello so a foreign or garbled stream is told apart from a version mismatch.
inline constexpr char kMagic[] = "FERRY\x01";

enum class MsgType : uint8_t {
  kHello = 1,      ///< d→f, first frame: who and what version
  kHostSpec = 2,   ///< f→d: this host's part of the job
  kStarted = 3,    ///< d→f: a rank was forked
  kOutput = 4,     ///< d→f: bytes of a rank's stdout/stderr
  kExited = 5,     ///< d→f: a rank ended
  kStdin = 6,      ///< f→d: bytes for the stdin rank; empty = EOF
  kSignal = 7,     ///< f→d: deliver a signal to every rank
  kTerminate = 8,  ///< f→d: SIGTERM all, SIGKILL after the grace period (0 = now)
  kDone = 9,       ///< d→f: every rank reaped; ferryd exits after sending it
  kFailure = 10,   ///< d→f: a rank or the host failed outside the rank's own code
  kLog = 11,       ///< d→f: a diagnostic line for the user
  kHeartbeat = 12, ///< both ways, every HostSpec::heartbeat_ms while a job runs
  kKvRequest = 13,       ///< d→f: a rank's Horovod KV request (already authenticated)
  kKvReply = 14,         ///< f→d: the store's answer to one kKvRequest
  kPmiBarrier = 15,      ///< d→f: every local rank entered PMI barrier `epoch`; its puts
  kPmiBarrierDone = 16,  ///< f→d: every host's puts of barrier `epoch`; release the ranks
  kPmiAbort = 17,        ///< d→f: a rank called PMI abort: abort the job with its code
  kStdinAck = 18,        ///< d→f: this many kStdin bytes were written to the rank or dropped
};

/// First frame from ferryd. Its magic and version fields keep their place in every version.
struct Hello {
  uint32_t version = kProtocolVersion;
  std::string hostname;
  int32_t pid = 0;
  uint16_t free_port = 0;  ///< a TCP port that was free on this host (MASTER_PORT default)
  uint16_t kv_port = 0;    ///< where ferryd's KV proxy listens on 127.0.0.1 (0: none)
  std::vector<std::string> interfaces;  ///< interfaces_to_lines() of this host
};

/// One rank to start: its global rank and the variables that differ per rank ("K=V").
struct RankLaunch {
  int32_t rank = 0;
  std::vector<std::string> env;
  std::vector<std::string> extra_args;  ///< appended to HostSpec::argv (--local-rank=N)
};

/// A host's part of the job.
struct HostSpec {
  uint32_t version = kProtocolVersion;
  std::string job_id;
  std::string wdir;                  ///< "" = ferryd's own working directory
  std::vector<std::string> argv;     ///< the command, argv[0] looked up in the rank's PATH
  std::vector<std::string> env;      ///< job-wide "K=V" applied over ferryd's environment
  std::vector<RankLaunch> ranks;
  int32_t stdin_rank = -1;           ///< rank that receives kStdin bytes; -1 = none
  uint32_t kill_grace_ms = 5000;
  bool verbose = false;
  bool wdir_fallback = false;        ///< wdir missing on this host: use $HOME (default wdir)
  uint32_t heartbeat_ms = 0;         ///< >0: heartbeats both ways; 3 missed = peer lost
  std::string secret;                ///< job secret the KV proxy requires of its clients
  bool pmi = false;                  ///< serve PMI-1: PMI_FD and friends for each rank
  int32_t world_size = 0;            ///< PMI_SIZE
  std::string pmi_process_mapping;   ///< value of the PMI key PMI_process_mapping
  BindingOptions binding;            ///< cores and devices per rank (binding part)
};

/// A Horovod KV request carried from a rank through its ferryd to the front end's store.
struct KvRequest {
  uint32_t id = 0;  ///< ferryd's number for it; echoed in the reply
  std::string method;
  std::string target;
  std::string body;
};

struct KvReply {
  uint32_t id = 0;
  uint16_t status = 200;
  std::string body;
};

/// One PMI barrier, both ways: d→f this host's puts since the previous barrier; f→d the
/// puts of every host (kPmiBarrierDone). `keys` and `values` have equal length.
struct PmiBarrier {
  uint32_t epoch = 0;
  std::vector<std::string> keys;
  std::vector<std::string> values;
};

/// A rank called PMI abort (MPI_Abort).
struct PmiAbort {
  int32_t rank = 0;
  int32_t exit_code = 1;
  std::string message;
};

struct Started {
  int32_t rank = 0;
  int32_t pid = 0;
};

struct Output {
  int32_t rank = 0;
  uint8_t stream = 1;  ///< 1 stdout, 2 stderr
  std::string data;
};

/// An Output message whose data still lies in the frame it came in (see FrameView).
struct OutputView {
  int32_t rank = 0;
  uint8_t stream = 1;
  std::string_view data;
};

/// How a rank ended: `signal` != 0 means killed by that signal, else `exit_code`.
struct Exited {
  int32_t rank = 0;
  int32_t exit_code = 0;
  int32_t signal = 0;
};

struct Failure {
  int32_t rank = -1;  ///< -1: the host as a whole
  std::string message;
};

std::string encode(const Hello& m);
std::string encode(const HostSpec& m);
std::string encode(const Started& m);
std::string encode(const Output& m);
std::string encode(const Exited& m);
std::string encode(const Failure& m);
std::string encode(const KvRequest& m);
std::string encode(const KvReply& m);
/// `done` false: kPmiBarrier (d→f); true: kPmiBarrierDone (f→d).
std::string encode(const PmiBarrier& m, bool done);
std::string encode(const PmiAbort& m);
std::string encode_stdin(std::string_view data);
std::string encode_signal(int32_t signo);
std::string encode_terminate(uint32_t grace_ms);
std::string encode_done();
std::string encode_log(std::string_view line);
std::string encode_heartbeat();
std::string encode_stdin_ack(uint32_t bytes);

/// Decodes a Hello; a foreign stream or another protocol version is an Error naming both.
Result<Hello> decode_hello(const Frame& f);
Result<HostSpec> decode_host_spec(const Frame& f);
Result<Started> decode_started(const Frame& f);
Result<Output> decode_output(const Frame& f);
/// decode_output() without copying the data: the hot path of a job's output.
Result<OutputView> decode_output(const FrameView& f);
Result<Exited> decode_exited(const Frame& f);
Result<Failure> decode_failure(const Frame& f);
Result<KvRequest> decode_kv_request(const Frame& f);
Result<KvReply> decode_kv_reply(const Frame& f);
/// Decodes kPmiBarrier or kPmiBarrierDone.
Result<PmiBarrier> decode_pmi_barrier(const Frame& f);
Result<PmiAbort> decode_pmi_abort(const Frame& f);
/// Payload of kStdin / kLog (the raw bytes), of kSignal (signo), kTerminate (grace ms),
/// kStdinAck (bytes, as an unsigned value).
Result<int32_t> decode_i32(const Frame& f);

}  // namespace ferry::wire
