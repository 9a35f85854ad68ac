#pragma once
/// \file
/// The messages that diagnose a job: the data network's preflight, `ferryrun --check`'s host
/// description, and the state report of a running job. Part of messages.hpp, which includes
/// it once MsgType is declared: include messages.hpp, not this file.

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

namespace ferry::wire {

/// f→d: describe every running rank of this host (the state report, when a job hangs).
struct StateRequest {
  static constexpr MsgType kType = MsgType::kStateRequest;
  uint32_t id = 0;  ///< echoed in the StateReport
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.id);
  }
};

/// One running rank as its ferryd saw it.
struct RankState {
  int32_t rank = 0;
  int32_t pid = 0;
  std::string state;          ///< from /proc: "running", "sleeping", "disk sleep (D)", ...
  uint32_t cpu_permille = 0;  ///< CPU used over the sample, 1000 = one core busy
  uint32_t sample_ms = 0;     ///< how long the CPU sample was
  uint32_t threads = 0;
  std::string stack;  ///< native and Python frames as text, or why they are missing
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.rank, m.pid, m.state, m.cpu_permille, m.sample_ms, m.threads, m.stack);
  }
};

/// d→f: the state of every rank this ferryd runs, for StateRequest `id`.
struct StateReport {
  static constexpr MsgType kType = MsgType::kStateReport;
  uint32_t id = 0;
  std::vector<RankState> ranks;
  std::string note;  ///< a host-wide remark (no stack tool installed), "" none
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.id, m.ranks, m.note);
  }
};

/// f→d, before the ranks start: rank 0's host listens on `address`:`port` (MASTER_ADDR and
/// MASTER_PORT) until its HostSpec arrives (`listen`); every other host connects there, giving
/// up after `timeout_ms`. In the second round every host listens on its own address on the
/// chosen interface (`port` 0: any free one) and connects to the next host's. Each answers
/// with one PreflightResult.
struct Preflight {
  static constexpr MsgType kType = MsgType::kPreflight;
  bool listen = false;
  std::string address;
  uint16_t port = 0;
  uint32_t timeout_ms = 0;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.listen, m.address, m.port, m.timeout_ms);
  }
};

/// d→f: `error` is "" when listening (or the connection) worked, else why not, with the errno
/// name in `reason` (ETIMEDOUT, ECONNREFUSED, EADDRNOTAVAIL, ...); `interface` is the one this
/// host used for the address (its own, or the one its route leaves by), "" unknown; `port` the
/// one it listens on (a listen that asked for any).
struct PreflightResult {
  static constexpr MsgType kType = MsgType::kPreflightResult;
  std::string error;
  std::string reason;
  std::string interface;
  uint32_t elapsed_ms = 0;
  uint16_t port = 0;
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.error, m.reason, m.interface, m.elapsed_ms, m.port);
  }
};

/// f→d: `ferryrun --check` wants this host's description (no rank starts).
struct CheckRequest {
  static constexpr MsgType kType = MsgType::kCheckRequest;
  template <class M>
  static auto fields(M&) {
    return std::tie();
  }
};

/// d→f: what `ferryrun --check` shows of a host. `software` holds "name version" lines
/// ("python3 3.11.2", "torch absent").
struct CheckReport {
  static constexpr MsgType kType = MsgType::kCheckReport;
  std::string version;  ///< ferryd's release
  uint32_t cores = 0;
  uint32_t numa_nodes = 0;
  uint32_t accelerators = 0;
  std::string accelerator_kind;  ///< "NVIDIA GPU", ...; "" none
  std::vector<std::string> software;
  std::vector<std::string> link_speeds;  ///< "eth0 10000": Mb/s from sysfs, where known
  template <class M>
  static auto fields(M& m) {
    return std::tie(m.version, m.cores, m.numa_nodes, m.accelerators, m.accelerator_kind,
                    m.software, m.link_speeds);
  }
};

}  // namespace ferry::wire
