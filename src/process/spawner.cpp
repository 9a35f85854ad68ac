#include "ferry/process/spawner.hpp"

#include <sys/wait.h>

#include <csignal>

namespace ferry {

SystemSpawner::SystemSpawner() = default;
SystemSpawner::~SystemSpawner() = default;

Result<pid_t> SystemSpawner::spawn(const SpawnRequest& req) { return spawn_process(req); }

void SystemSpawner::signal_group(pid_t pgid, int signo) {
  if (pgid > 0) ::kill(-pgid, signo);
}

void SystemSpawner::watch(asio::io_context& io, std::function<void()> changed) {
  changed_ = std::move(changed);
  sigchld_ = std::make_unique<asio::signal_set>(io, SIGCHLD);
  wait_signal();
}

void SystemSpawner::wait_signal() {
  sigchld_->async_wait([this](std::error_code ec, int) {
    if (ec) return;
    changed_();
    wait_signal();
  });
}

std::optional<ChildExit> SystemSpawner::reap() {
  int status = 0;
  pid_t pid = ::waitpid(-1, &status, WNOHANG);
  if (pid <= 0) return std::nullopt;
  return ChildExit{pid, status};
}

}  // namespace ferry
