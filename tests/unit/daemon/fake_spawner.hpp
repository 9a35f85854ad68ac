#pragma once
// A ProcessSpawner that forks nothing: each "child" is a record holding copies of the stdio
// fds it was given, so a test writes its output and reads its stdin, and ends it (or a
// signal does) when the test wants.

#include <fcntl.h>
#include <signal.h>

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "ferry/process/spawner.hpp"
#include "ferry/process/unique_fd.hpp"

namespace ferry::test_support {

class FakeSpawner : public ProcessSpawner {
 public:
  using Clock = std::chrono::steady_clock;

  // Beyond the kernel's largest pid (PID_MAX_LIMIT, 2^22): what reaches kill(2) without the
  // fake (the sweep, ferryd's guard) finds no such process instead of hitting a real one.
  static constexpr pid_t kFirstPid = 1 << 30;

  struct Child {
    pid_t pid = -1;
    std::vector<std::string> argv;
    std::vector<std::string> env;
    UniqueFd in, out, err;       // the child's ends: read its stdin, write its output here
    std::vector<UniqueFd> kept;  // copies of the fds it was to keep (its PMI socket's end)
    bool ended = false;
  };
  struct Sent {
    pid_t pgid;
    int signo;
    Clock::time_point at;
  };

  /// Runs at each spawn, before it; the argument is how many spawns came before.
  std::function<void(size_t)> on_spawn;
  /// Children survive SIGTERM (they still die of SIGKILL).
  bool ignore_sigterm = false;

  Result<pid_t> spawn(const SpawnRequest& req) override {
    if (on_spawn) on_spawn(children_.size());
    auto c = std::make_unique<Child>();
    c->pid = kFirstPid + static_cast<pid_t>(children_.size());
    c->argv = req.argv;
    c->env = req.env;
    c->in = copy(req.stdin_fd);
    c->out = copy(req.stdout_fd);
    c->err = copy(req.stderr_fd);
    for (int fd : req.keep_fds) c->kept.push_back(copy(fd));
    children_.push_back(std::move(c));
    return children_.back()->pid;
  }

  void signal_group(pid_t pgid, int signo) override {
    signals_.push_back({pgid, signo, Clock::now()});
    if (signo == 0 || (signo == SIGTERM && ignore_sigterm)) return;
    if (Child* c = find(pgid)) end(*c, signo);  // killed: the wait status is the signal
  }

  void watch(asio::io_context& io, std::function<void()> changed) override {
    io_ = &io;
    changed_ = std::move(changed);
  }

  std::optional<ChildExit> reap() override {
    if (exits_.empty()) return std::nullopt;
    ChildExit e = exits_.front();
    exits_.pop_front();
    return e;
  }

  /// Ends `c` with exit status `code`. With `keep_pipes`, its stdout and stderr stay open,
  /// as when a background child it left holds them.
  void exit(Child& c, int code, bool keep_pipes = false) { end(c, code << 8, keep_pipes); }

  const std::vector<std::unique_ptr<Child>>& children() const { return children_; }
  const std::vector<Sent>& signals() const { return signals_; }

 private:
  static UniqueFd copy(int fd) { return UniqueFd(fd < 0 ? -1 : ::fcntl(fd, F_DUPFD_CLOEXEC, 3)); }

  Child* find(pid_t pid) {
    for (auto& c : children_)
      if (c->pid == pid && !c->ended) return c.get();
    return nullptr;
  }

  void end(Child& c, int status, bool keep_pipes = false) {
    if (c.ended) return;
    c.ended = true;
    c.in.reset();
    if (!keep_pipes) {
      c.out.reset();
      c.err.reset();
    }
    exits_.push_back({c.pid, status});
    if (io_) asio::post(*io_, changed_);  // as SIGCHLD would, a little later
  }

  std::vector<std::unique_ptr<Child>> children_;
  std::vector<Sent> signals_;
  std::deque<ChildExit> exits_;
  asio::io_context* io_ = nullptr;
  std::function<void()> changed_;
};

}  // namespace ferry::test_support
