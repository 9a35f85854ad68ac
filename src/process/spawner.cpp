#include "ferry/process/spawner.hpp"

#include <sys/resource.h>
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
  struct rusage ru {};
  pid_t pid = ::wait4(-1, &status, WNOHANG, &ru);
  if (pid <= 0) return std::nullopt;
  const auto us = [](const timeval& t) {
    return static_cast<uint64_t>(t.tv_sec) * 1'000'000 + static_cast<uint64_t>(t.tv_usec);
  };
  // glibc's struct rusage keeps ru_maxrss in an anonymous union.
  const long max_rss = ru.ru_maxrss;  // NOLINT(cppcoreguidelines-pro-type-union-access)
  return ChildExit{pid, status, us(ru.ru_utime) + us(ru.ru_stime), static_cast<uint64_t>(max_rss)};
}

}  // namespace ferry
