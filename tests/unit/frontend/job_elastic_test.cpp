// Horovod elastic mode with the daemons played in-process (fake_daemon.hpp): how a job ends
// when its workers end in ways the rounds do not (a worker that asked for its next rank, then
// exited while the round still waited).
#include <gtest/gtest.h>

#include "fake_daemon.hpp"

namespace ferry {
namespace {

using test_support::FakeDaemonLink;
using test_support::FakeScript;
using test_support::run_with_fake_daemons;

JobOptions elastic_hosts(int n) {
  JobOptions o;
  for (int i = 1; i <= n; ++i) {
    HostEntry h;
    h.name = "node" + std::to_string(i);
    h.slots = 1;
    o.hosts.push_back(h);
  }
  o.command = {"train"};
  o.wdir = "/tmp";
  o.kill_grace_s = 1;
  o.elastic.fixed_hosts = true;
  o.elastic.min_np = n;
  o.elastic.timeout_s = 2;
  return o;
}

// node1's worker asks for its rank after a reset (READY), then exits with `ready_exit` while
// the round waits; node2's worker fails with 3.
std::function<FakeScript(const HostEntry&)> ready_then_exit(int ready_exit) {
  return [=](const HostEntry& host) -> FakeScript {
    return [=, name = host.name](FakeDaemonLink& d) {
      d.start_all();
      const int rank = d.spec().ranks.front().rank;
      if (name == "node2") {
        d.rank_exits(rank, 3);
      } else {
        d.send_frame(wire::encode(wire::KvRequest{1, "GET", "/rank_and_size/node1:0", ""}));
        d.rank_exits(rank, ready_exit);
      }
      d.done_if_all_ended();
    };
  };
}

TEST(JobElastic, EveryWorkerGoneWhileARoundWaitsIsAFailureNotASuccess) {
  // node2's failure leaves 1 slot of the 2 --min-np asks: the round waits for slots, with
  // node1's worker waiting for its rank. That worker exits 0 without ever getting one: no
  // worker finished, so the job must not end 0.
  auto r = run_with_fake_daemons(elastic_hosts(2), ready_then_exit(0));
  EXPECT_EQ(r.status, 3) << r.diag;
  EXPECT_NE(r.diag.find("elastic: every worker exited while the job waited for 2 slots "
                        "(--min-np); none finished"),
            std::string::npos)
      << r.diag;
}

TEST(JobElastic, AWorkerThatFailsWhileItsRoundWaitsEndsTheJobAsFailed) {
  auto r = run_with_fake_daemons(elastic_hosts(2), ready_then_exit(5));
  EXPECT_NE(r.status, 0) << r.diag;
  EXPECT_EQ(r.diag.find("timed out waiting"), std::string::npos) << r.diag;
}

// node2's worker fails: node2 leaves, and node3's worker, started as rank 2, holds rank 1 in
// the world of 2 that follows. Its output is tagged 1 from then on; node1's keeps 0.
TEST(JobElastic, AWorkerThatTakesAnotherRankIsTaggedWithIt) {
  JobOptions o = elastic_hosts(3);
  o.elastic.min_np = 2;
  auto r = run_with_fake_daemons(o, [](const HostEntry& host) -> FakeScript {
    return [name = host.name](FakeDaemonLink& d) {
      d.start_all();
      const int rank = d.spec().ranks.front().rank;
      if (name == "node2") {
        d.rank_exits(rank, 3);
        d.done_if_all_ended();
        return;
      }
      d.on_kv_reply = [rank](FakeDaemonLink& l, const wire::KvReply&) {
        l.rank_exits(rank, 0);
        l.done_if_all_ended();
      };
      d.send_frame(wire::encode(wire::KvRequest{1, "GET", "/rank_and_size/" + name + ":0", ""}));
    };
  });
  EXPECT_EQ(r.status, 0) << r.diag;
  EXPECT_NE(r.diag.find("elastic: reset 1: 2 workers on 2 hosts"), std::string::npos) << r.diag;
  const std::vector<std::pair<int, int>> want{{0, 0}, {2, 1}};
  EXPECT_EQ(r.relabels, want) << r.diag;
}

}  // namespace
}  // namespace ferry
