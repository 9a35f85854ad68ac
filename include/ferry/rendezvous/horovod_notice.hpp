#pragma once
/// \file
/// The two pickles an elastic Horovod driver handles (horovod/runner/elastic/worker.py): the
/// address of a worker's notification service, which each worker PUTs into the store once
/// (`/worker_addresses/<host>:<local_rank>`, base64 of a cloudpickled
/// `({iface: [(ip, port), ...]}, key)`), and the HostsUpdatedRequest the driver sends to rank 0
/// when hosts come or go. Pure; the connection and the HMAC are the front end's.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ferry/common/result.hpp"

namespace ferry {

/// Where a worker's notification service listens, and the key its messages are signed with.
struct WorkerAddresses {
  std::vector<std::pair<std::string, int>> addresses;  ///< (ip, port), every interface's
  std::string key;                                     ///< 32 bytes
};

/// Decodes a `PUT /worker_addresses/...` body. An Error says what does not fit: any rank can
/// PUT any body, so an address must be printable text and its port 1-65535.
Result<WorkerAddresses> parse_worker_addresses(std::string_view base64_body);

/// The pickled HostsUpdatedRequest(timestamp, res) (`update`: 1 removed, 2 added, 3 both), as
/// cloudpickle writes it with protocol 5. `timestamp` is Unix seconds (below 2^31).
std::string hosts_updated_pickle(uint32_t timestamp, int update);

/// A message on Horovod's service wire: `digest` (HMAC-SHA256 of `body` under the worker's
/// key, 32 bytes), the body's length (4 bytes, little-endian), the body.
std::string service_message(std::string_view digest, std::string_view body);

}  // namespace ferry
