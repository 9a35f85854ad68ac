// The fork server of a pool's host: a real one, forked by the test, with hooks standing in for
// ferryd's (the job's ferryd is `serve`). One request gives one child on the stream and stderr
// sent with it, named as a job's ferryd, in a process group of its own, whose exit status
// comes back; the server ends with its control socket, and what it forked ends with it. Its
// answers are parsed strictly.
#include "ferry/pool/fork_server.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <string>

#include "ferry/common/posix_handles.hpp"
#include "ferry/common/read_text_file.hpp"

namespace ferry {
namespace {

// Reads what `fd` has within `ms` (one read), or "" at its end or when nothing came.
std::string read_some(int fd, int ms = 5000) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, ms) != 1) return "";
  std::array<char, 512> buf{};
  const ssize_t n = ::read(fd, buf.data(), buf.size());
  return n > 0 ? std::string(buf.data(), static_cast<size_t>(n)) : "";
}

// Whether `fd` reaches its end within 5 s (and not merely stays silent).
bool ends(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 5000) != 1) return false;
  char c = 0;
  return ::read(fd, &c, 1) == 0;
}

// The next event on `control` within 5 s.
Result<std::optional<ForkServerEvent>> next_event(int control) {
  pollfd p{control, POLLIN, 0};
  if (::poll(&p, 1, 5000) != 1) return std::optional<ForkServerEvent>();
  return read_fork_server_event(control);
}

struct Server {
  pid_t pid = -1;
  UniqueFd control;
  UniqueFd prepared;  // reads "prepared" once the hook ran
};

// A fork server in a child of the test; its `serve` says its argument and process, waits for a
// line on its stream, writes to its stderr and exits 7.
Server start_server() {
  int sv[2], pp[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
  EXPECT_EQ(::pipe2(pp, O_CLOEXEC), 0);
  Server s;
  s.pid = ::fork();
  if (s.pid == 0) {
    ::close(sv[0]);
    ::close(pp[0]);
    static char arg0[] = "ferryd";
    static char arg1[] = "--fork-server";
    static char* argv[] = {arg0, arg1, nullptr};
    const int told = pp[1];
    ForkServerHooks hooks;
    hooks.prepare = [told] {
      (void)!::write(told, "prepared", 8);
      ::close(told);
    };
    hooks.serve = [](int in, int out) {
      const std::string hello = std::string("arg=") + argv[1] + " in=" + std::to_string(in) +
                                " out=" + std::to_string(out);
      (void)!::write(out, hello.data(), hello.size());
      std::array<char, 64> buf{};
      if (::read(in, buf.data(), buf.size()) <= 0) return 3;
      (void)!::write(2, "to stderr\n", 10);
      return 7;
    };
    ::_exit(run_fork_server(sv[1], hooks, argv));
  }
  ::close(sv[1]);
  ::close(pp[1]);
  s.control.reset(sv[0]);
  s.prepared.reset(pp[0]);
  return s;
}

struct Requested {
  UniqueFd stream, err;
};

Requested request(int control) {
  int sv[2], ep[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  EXPECT_EQ(::pipe2(ep, O_CLOEXEC), 0);
  UniqueFd theirs(sv[1]), err_write(ep[1]);
  auto sent = request_fork(control, theirs.get(), err_write.get());
  EXPECT_TRUE(sent.ok()) << sent.error().message;
  return {UniqueFd(sv[0]), UniqueFd(ep[0])};
}

TEST(PoolForkServer, ForksOneJobFerrydPerRequestAndReportsItsExit) {
  Server s = start_server();
  ASSERT_GT(s.pid, 0);
  EXPECT_EQ(read_some(s.prepared.get()), "prepared") << "prepare runs before any fork";
  ::fcntl(s.control.get(), F_SETFL, O_NONBLOCK);

  for (int round = 0; round < 2; ++round) {
    Requested r = request(s.control.get());
    auto forked = next_event(s.control.get());
    ASSERT_TRUE(forked.ok() && *forked) << (forked.ok() ? "no answer" : forked.error().message);
    ASSERT_EQ((*forked)->kind, ForkServerEvent::Kind::kForked);
    const pid_t child = (*forked)->pid;
    ASSERT_GT(child, 0);
    EXPECT_NE(child, s.pid);

    // Its stream is the one sent, for reading and writing, on fds of its own (0, 1 and 2 stay
    // the standard ones); `ps` calls it a job's ferryd.
    const std::string hello = read_some(r.stream.get());
    EXPECT_EQ(hello.rfind("arg=--stdio in=", 0), 0U) << hello;
    EXPECT_EQ(hello.find(" in=0 "), std::string::npos) << hello;
    auto comm = read_text_file("/proc/" + std::to_string(child) + "/comm", 64, "comm");
    ASSERT_TRUE(comm.ok());
    EXPECT_EQ(*comm, "ferryd\n");
    auto status = read_text_file("/proc/" + std::to_string(child) + "/status", 65536, "status");
    ASSERT_TRUE(status.ok());
    EXPECT_NE(status->find("PPid:\t" + std::to_string(s.pid) + "\n"), std::string::npos)
        << "the fork server's child";
    EXPECT_EQ(::getpgid(child), child) << "in a process group of its own";

    ASSERT_EQ(::write(r.stream.get(), "go\n", 3), 3);
    EXPECT_EQ(read_some(r.err.get()), "to stderr\n");
    auto exited = next_event(s.control.get());
    ASSERT_TRUE(exited.ok() && *exited) << (exited.ok() ? "no answer" : exited.error().message);
    EXPECT_EQ((*exited)->kind, ForkServerEvent::Kind::kExited);
    EXPECT_EQ((*exited)->pid, child);
    EXPECT_TRUE(WIFEXITED((*exited)->status) && WEXITSTATUS((*exited)->status) == 7)
        << "status " << (*exited)->status;
  }

  s.control.reset();
  int st = 0;
  ASSERT_EQ(::waitpid(s.pid, &st, 0), s.pid);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "ends with its control socket";
}

TEST(PoolForkServer, WhatItForkedEndsWithIt) {
  Server s = start_server();
  ASSERT_GT(s.pid, 0);
  ::fcntl(s.control.get(), F_SETFL, O_NONBLOCK);
  Requested r = request(s.control.get());
  auto forked = next_event(s.control.get());
  ASSERT_TRUE(forked.ok() && *forked);
  ASSERT_EQ((*forked)->kind, ForkServerEvent::Kind::kForked);
  EXPECT_EQ(read_some(r.stream.get()).rfind("arg=--stdio", 0), 0U);
  // The child waits for a line that never comes; the server is killed.
  ASSERT_EQ(::kill(s.pid, SIGKILL), 0);
  int st = 0;
  ASSERT_EQ(::waitpid(s.pid, &st, 0), s.pid);
  // SIGTERM (its parent-death signal) ends the child: its stream ends, with nothing on stderr
  // (it never got its line, so it never wrote there).
  EXPECT_TRUE(ends(r.stream.get()));
  EXPECT_TRUE(ends(r.err.get()));
}

TEST(PoolForkServer, ARequestWithoutAStreamIsAnsweredAsFailed) {
  Server s = start_server();
  ASSERT_GT(s.pid, 0);
  ::fcntl(s.control.get(), F_SETFL, O_NONBLOCK);
  ASSERT_EQ(::send(s.control.get(), "F", 1, 0), 1);
  auto answer = next_event(s.control.get());
  ASSERT_TRUE(answer.ok() && *answer);
  EXPECT_EQ((*answer)->kind, ForkServerEvent::Kind::kFailed);
  EXPECT_EQ((*answer)->error, "the request carried no stream");
  s.control.reset();
  int st = 0;
  ASSERT_EQ(::waitpid(s.pid, &st, 0), s.pid);
}

TEST(PoolForkServer, ItsAnswersAreParsedStrictly) {
  auto f = parse_fork_server_event("forked 12");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->kind, ForkServerEvent::Kind::kForked);
  EXPECT_EQ(f->pid, 12);
  auto x = parse_fork_server_event("exited 12 256");
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(x->kind, ForkServerEvent::Kind::kExited);
  EXPECT_EQ(x->pid, 12);
  EXPECT_EQ(x->status, 256);
  auto e =
      parse_fork_server_event("failed cannot fork ferryd: fork: Resource temporarily unavailable");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->kind, ForkServerEvent::Kind::kFailed);
  EXPECT_EQ(e->error, "cannot fork ferryd: fork: Resource temporarily unavailable");
  for (const char* bad : {"forked", "forked x", "forked 12 13", "forked -3", "exited 12",
                          "exited 12 ", "exited x 1", "hello", ""})
    EXPECT_FALSE(parse_fork_server_event(bad).ok()) << "'" << bad << "'";
}

}  // namespace
}  // namespace ferry
