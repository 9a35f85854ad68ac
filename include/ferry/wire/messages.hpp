#pragma once
/// \file
/// The messages ferryrun and ferryd exchange, and their encoding. Bump kProtocolVersion
/// whenever a message changes shape; each side refuses a peer of another version.

#include <cstdint>
#include <string>
#include <vector>

#include "ferry/common/result.hpp"
#include "ferry/wire/frame.hpp"

namespace ferry::wire {

inline constexpr uint32_t kProtocolVersion = 1;
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
};

/// First frame from ferryd. Its magic and version fields keep their place in every version.
struct Hello {
  uint32_t version = kProtocolVersion;
  std::string hostname;
  int32_t pid = 0;
  uint16_t free_port = 0;  ///< a TCP port that was free on this host (MASTER_PORT default)
};

/// One rank to start: its global rank and the variables that differ per rank ("K=V").
struct RankLaunch {
  int32_t rank = 0;
  std::vector<std::string> env;
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
std::string encode_stdin(std::string_view data);
std::string encode_signal(int32_t signo);
std::string encode_terminate(uint32_t grace_ms);
std::string encode_done();
std::string encode_log(std::string_view line);
std::string encode_heartbeat();

/// Decodes a Hello; a foreign stream or another protocol version is an Error naming both.
Result<Hello> decode_hello(const Frame& f);
Result<HostSpec> decode_host_spec(const Frame& f);
Result<Started> decode_started(const Frame& f);
Result<Output> decode_output(const Frame& f);
Result<Exited> decode_exited(const Frame& f);
Result<Failure> decode_failure(const Frame& f);
/// Payload of kStdin / kLog (the raw bytes), of kSignal (signo), kTerminate (grace ms).
Result<int32_t> decode_i32(const Frame& f);

}  // namespace ferry::wire
