#pragma once
// Private to src/frontend/: one message to a Horovod worker's notification service (the elastic
// driver's "hosts updated" to rank 0): connect to the first address that answers, write the
// message, wait for the service's reply or its close, all on the job's loop.

#include <asio.hpp>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace ferry {

/// Sends `message` (a whole service message: digest, length, body) to the first of `addresses`
/// (ip, port) that accepts a connection within 5 s each; `done("")` once the service replied or
/// closed, `done(why)` when none could be reached.
void send_service_message(asio::io_context& io, std::vector<std::pair<std::string, int>> addresses,
                          std::string message, std::function<void(const std::string&)> done);

}  // namespace ferry
