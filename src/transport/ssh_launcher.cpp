#include "ferry/transport/ssh_launcher.hpp"

#include <algorithm>
#include <asio/executor_work_guard.hpp>
#include <asio/post.hpp>
#include <thread>

#include "ssh_io_thread.hpp"
#include "ssh_link.hpp"
#include "ssh_session.hpp"

namespace ferry {
namespace {

// Below this many CPUs the sessions run on the loop itself: where the front end shares
// two CPUs with everything else, handing each batch to another core costs more CPU
// (cache misses on every byte, wake-ups) than the parallel decryption gains (measured in
// docs/performance/output.md).
constexpr unsigned kThreadsFromCpus = 4;

}  // namespace

std::string shell_quote(const std::string& word) {
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

SshLauncher::SshLauncher(asio::io_context& io, SshOptions options)
    : io_(io), options_(std::move(options)) {
  if (options_.io_threads == 0) {
    const unsigned cpus = std::thread::hardware_concurrency();
    options_.io_threads = cpus < kThreadsFromCpus ? -1 : static_cast<int>(std::min(cpus, 8U));
  }
  if (options_.io_threads > 0)
    budget_ = std::make_shared<InFlightBudget>(std::max<size_t>(options_.all_in_flight, 1));
  // Sessions log where they run; the lines are handed to the loop, in order.
  if (options_.log)
    options_.log = [&io, log = std::move(options_.log)](const std::string& line) {
      asio::post(io, [log, line] { log(line); });
    };
}

SshLauncher::~SshLauncher() {
  for (auto& t : threads_) t->stop();
}

SshIoThread& SshLauncher::next_thread() {
  SshIoThread::Log libssh_log = options_.verbose ? options_.log : nullptr;
  if (options_.io_threads < 0) {
    if (threads_.empty()) threads_.push_back(std::make_shared<SshIoThread>(io_, libssh_log));
    return *threads_.front();
  }
  const size_t i = next_++ % static_cast<size_t>(options_.io_threads);
  if (i == threads_.size()) threads_.push_back(std::make_shared<SshIoThread>(libssh_log));
  return *threads_[i];
}

void SshLauncher::async_open(const HostEntry& host, const DaemonCommand& cmd, OpenHandler handler) {
  SshIoThread& thread = next_thread();
  std::string path = !host.ferryd.empty() ? host.ferryd : cmd.ferryd_path;
  std::function<void(const std::string&)> on_stderr;
  if (cmd.on_stderr)
    on_stderr = [&loop = io_, f = cmd.on_stderr](const std::string& line) {
      asio::post(loop, [f, line] { f(line); });
    };
  // The work guard keeps the loop running until the handler has run there.
  asio::post(
      thread.io(), [weak = thread.weak_from_this(), &loop = io_, options = options_, host = host,
                    budget = budget_, path = std::move(path), on_stderr = std::move(on_stderr),
                    handler = std::move(handler), busy = asio::make_work_guard(io_)]() mutable {
        // A launcher destroyed meanwhile dropped its opens, this one too.
        std::shared_ptr<SshIoThread> held = weak.lock();
        if (!held || held->stopped()) return;
        SshIoThread* t = held.get();
        std::erase_if(t->opening, [](const std::weak_ptr<SshSession>& w) { return w.expired(); });
        auto session = std::make_shared<SshSession>(t->io(), std::move(options), std::move(host),
                                                    std::move(path), std::move(on_stderr));
        t->opening.push_back(session);
        // The completion holds the session until it has run; on success the session moves into
        // the link, on failure it is released with the completion.
        session->open([t, &loop, session, budget, handler = std::move(handler),
                       busy = std::move(busy)](const Status& status) mutable {
          Result<std::unique_ptr<Link>> r =
              status ? Result<std::unique_ptr<Link>>(std::make_unique<SshLink>(
                           loop, t->shared_from_this(), std::move(session), std::move(budget)))
                     : Result<std::unique_ptr<Link>>(status.error());
          asio::post(loop, [handler = std::move(handler), r = std::move(r),
                            busy = std::move(busy)]() mutable { handler(std::move(r)); });
        });
      });
}

void SshLauncher::cancel_all() {
  for (auto& thread : threads_) {
    asio::post(thread->io(), [t = thread.get()] {
      for (auto& weak : t->opening)
        if (auto session = weak.lock()) session->abort_open("cancelled", true);
      t->opening.clear();
    });
  }
}

}  // namespace ferry
