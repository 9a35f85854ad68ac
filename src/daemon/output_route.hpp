#pragma once
// Private to src/daemon/: ferryd's end of a direct output route. ferryrun offers one over SSH
// (wire::OutputRoute); ferryd connects back with the handshake of connect_back.hpp and, once
// that passed, sends its frames on that connection, sealed, instead of on its stdout: sshd no
// longer reads, encrypts and relays every output byte.

#include <asio.hpp>
#include <cstdint>
#include <functional>
#include <string>

#include "ferry/common/result.hpp"
#include "ferry/process/unique_fd.hpp"
#include "ferry/transport/sealed_records.hpp"
#include "ferry/wire/messages.hpp"

namespace ferry {

/// A route that is ready: the connected socket and the sealer keyed for it.
struct OpenedRoute {
  UniqueFd fd;
  RecordSealer sealer;
};

/// Connects as `offer` says, on `io`; `done` gets the route or why there is none (one line).
void open_output_route(asio::io_context& io, const wire::OutputRoute& offer,
                       std::function<void(Result<OpenedRoute>)> done);

/// The first record on a route: how many bytes ferryd queued on its stdout before it, which
/// ferryrun reads there first (8 bytes, big-endian).
std::string route_preamble(uint64_t stdout_bytes);

}  // namespace ferry
