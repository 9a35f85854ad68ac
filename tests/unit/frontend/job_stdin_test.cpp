// ferryrun's stdin (JobOptions::stdin_fd) goes to the stdin rank's host only, EOF included,
// and no other host is sent any.
#include <gtest/gtest.h>
#include <unistd.h>

#include "fake_daemon.hpp"

namespace ferry {
namespace {

using test_support::FakeDaemonLink;
using test_support::FakeScript;
using test_support::run_with_fake_daemons;

TEST(JobStdin, GoesToTheStdinRanksHostOnlyThenEof) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  ASSERT_EQ(::write(p[1], "hello\nworld\n", 12), 12);
  ::close(p[1]);
  JobOptions o;
  for (const char* name : {"node1", "node2"}) {
    HostEntry h;
    h.name = name;
    h.slots = 2;
    o.hosts.push_back(h);
  }
  o.command = {"cat"};
  o.wdir = "/tmp";
  o.stdin_rank = 3;
  o.stdin_fd = p[0];
  // node2 (ranks 2-3) runs until its stdin ends; node1's ranks exit at once.
  auto r = run_with_fake_daemons(o, [](const HostEntry& h) -> FakeScript {
    if (h.name == "node2") return [](FakeDaemonLink& d) { d.exit_at_stdin_eof(); };
    return nullptr;
  });
  ::close(p[0]);
  EXPECT_EQ(r.status, 0) << r.diag;
  EXPECT_EQ(r.stdin.size(), 1u);
  EXPECT_EQ(r.stdin["node2"], "hello\nworld\n");
  ASSERT_EQ(r.specs.size(), 2u);
  for (const auto& s : r.specs) EXPECT_EQ(s.spec.stdin_rank, s.host.name == "node2" ? 3 : -1);
}

}  // namespace
}  // namespace ferry
