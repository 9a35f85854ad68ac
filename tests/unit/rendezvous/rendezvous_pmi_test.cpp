#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "ferry/rendezvous/pmi_host.hpp"
#include "ferry/rendezvous/pmi_job.hpp"
#include "ferry/rendezvous/pmi_wire.hpp"

namespace ferry {
namespace {

// ---- wire ---------------------------------------------------------------------------------

TEST(PmiWire, ParsesCommandsAndArguments) {
  auto c = parse_pmi_line("cmd=put kvsname=kvs_1 key=-bcast-1-0 value=2F6465");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->cmd, "put");
  EXPECT_EQ(c->get("kvsname"), "kvs_1");
  EXPECT_EQ(c->get("key"), "-bcast-1-0");
  EXPECT_EQ(c->get("value"), "2F6465");
  EXPECT_FALSE(c->get("missing"));
  auto bare = parse_pmi_line("cmd=barrier_in");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->cmd, "barrier_in");
  EXPECT_TRUE(bare->args.empty());
}

TEST(PmiWire, KeepsBackslashEscapesInValues) {
  // MPICH >= 4.1 escapes spaces in values; ferry passes values through untouched.
  auto c = parse_pmi_line("cmd=put kvsname=k key=a value=x\\ y  ");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->get("value"), "x\\ y");
  EXPECT_EQ(format_pmi("get_result", {{"rc", "0"}, {"value", "x\\ y"}}),
            "cmd=get_result rc=0 value=x\\ y\n");
}

TEST(PmiWire, RefusesMalformedLines) {
  for (const char* bad :
       {"", "put key=1", "cmd= key=1", "cmd=put =v", "cmd=put k!y=1", "cmd=put key=a\tb"})
    EXPECT_FALSE(parse_pmi_line(bad)) << bad;
}

TEST(PmiWire, ReaderSplitsLinesAcrossChunks) {
  PmiReader r;
  r.feed("cmd=init pmi_version=1 pmi_sub");
  auto none = r.next();
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
  r.feed("version=1\ncmd=get_maxes\n\ncmd=get_appnum\n");
  std::vector<std::string> cmds;
  for (;;) {
    auto c = r.next();
    ASSERT_TRUE(c);
    if (!*c) break;
    cmds.push_back((*c)->cmd);
  }
  EXPECT_EQ(cmds, (std::vector<std::string>{"init", "get_maxes", "get_appnum"}));
}

TEST(PmiWire, ReaderTakesMcmdBlocksWhole) {
  PmiReader r;
  r.feed("mcmd=spawn\nnprocs=2\nexecname=/bin/my prog\nargcnt=0\nendcmd\ncmd=finalize\n");
  auto a = r.next();
  ASSERT_TRUE(a && *a);
  EXPECT_TRUE((*a)->multi);
  EXPECT_EQ((*a)->cmd, "spawn");
  EXPECT_EQ((*a)->get("execname"), "/bin/my prog");
  auto b = r.next();
  ASSERT_TRUE(b && *b);
  EXPECT_EQ((*b)->cmd, "finalize");
}

TEST(PmiWire, ReaderFailsOnOverlongLinesAndStaysFailed) {
  PmiReader r(16);
  r.feed(std::string(17, 'x'));
  EXPECT_FALSE(r.next());
  r.feed("cmd=finalize\n");
  EXPECT_FALSE(r.next());
}

// ---- host engine --------------------------------------------------------------------------

// Records what a PmiHost asks for.
struct Recorder {
  std::map<int, std::vector<std::string>> replies;
  std::vector<std::pair<uint32_t, std::vector<PmiKv>>> barriers;
  std::vector<std::string> aborts, failures;
  PmiHostEvents events() {
    PmiHostEvents e;
    e.reply = [this](int rank, std::string b) { replies[rank].push_back(std::move(b)); };
    e.barrier_ready = [this](uint32_t ep, std::vector<PmiKv> p) {
      barriers.emplace_back(ep, std::move(p));
    };
    e.abort = [this](int rank, int code, const std::string& m) {
      aborts.push_back(std::to_string(rank) + ":" + std::to_string(code) + ":" + m);
    };
    e.failed = [this](int rank, const std::string& why) {
      failures.push_back(std::to_string(rank) + ": " + why);
    };
    return e;
  }
  std::string last(int rank) {
    auto& v = replies[rank];
    return v.empty() ? "" : v.back();
  }
};

PmiHostConfig two_rank_host() {
  PmiHostConfig c;
  c.kvsname = "job7";
  c.world_size = 4;
  c.ranks = {2, 3};
  c.process_mapping = "(vector,(0,2,2))";
  return c;
}

TEST(PmiHost, EachRankOfAnMpmdJobGetsItsPartsAppnum) {
  Recorder rec;
  PmiHostConfig c = two_rank_host();
  c.appnums = {0, 1};  // rank 2 in the first part, rank 3 in the second
  PmiHost host(c, rec.events());
  host.feed(2, "cmd=init pmi_version=1 pmi_subversion=1\ncmd=get_appnum\n");
  EXPECT_EQ(rec.last(2), "cmd=appnum rc=0 appnum=0\n");
  host.feed(3, "cmd=init pmi_version=1 pmi_subversion=1\ncmd=get_appnum\n");
  EXPECT_EQ(rec.last(3), "cmd=appnum rc=0 appnum=1\n");
}

TEST(PmiHost, AnswersTheMpich40InitSequence) {
  Recorder rec;
  PmiHost host(two_rank_host(), rec.events());
  host.feed(2, "cmd=init pmi_version=1 pmi_subversion=1\n");
  EXPECT_EQ(rec.last(2), "cmd=response_to_init rc=0 pmi_version=1 pmi_subversion=1\n");
  host.feed(2, "cmd=get_maxes\n");
  EXPECT_EQ(rec.last(2), "cmd=maxes rc=0 kvsname_max=256 keylen_max=64 vallen_max=1024\n");
  host.feed(2, "cmd=get_appnum\n");
  EXPECT_EQ(rec.last(2), "cmd=appnum rc=0 appnum=0\n");
  host.feed(2, "cmd=get_my_kvsname\n");
  EXPECT_EQ(rec.last(2), "cmd=my_kvsname rc=0 kvsname=job7\n");
  host.feed(2, "cmd=get_universe_size\n");
  EXPECT_EQ(rec.last(2), "cmd=universe_size rc=0 size=4\n");
  host.feed(2, "cmd=get kvsname=job7 key=PMI_process_mapping\n");
  EXPECT_EQ(rec.last(2), "cmd=get_result rc=0 value=(vector,(0,2,2))\n");
  host.feed(2, "cmd=get kvsname=job7 key=nothing\n");
  EXPECT_EQ(rec.last(2).substr(0, 22), "cmd=get_result rc=1 ms");
  EXPECT_TRUE(host.initialized(2));
  EXPECT_FALSE(host.initialized(3));
  EXPECT_TRUE(rec.failures.empty());
}

TEST(PmiHost, OneBarrierMessagePerHostCarryingItsPuts) {
  Recorder rec;
  PmiHost host(two_rank_host(), rec.events());
  host.feed(2, "cmd=put kvsname=job7 key=card-2 value=aa\n");
  host.feed(2, "cmd=put kvsname=job7 key=card-2 value=ab\n");  // last value wins
  host.feed(3, "cmd=put kvsname=job7 key=card-3 value=bb\n");
  EXPECT_EQ(rec.last(3), "cmd=put_result rc=0\n");
  // Own puts are visible on this host before the barrier.
  host.feed(3, "cmd=get kvsname=job7 key=card-2\n");
  EXPECT_EQ(rec.last(3), "cmd=get_result rc=0 value=ab\n");
  host.feed(2, "cmd=barrier_in\n");
  EXPECT_TRUE(rec.barriers.empty());
  const auto replies_before = rec.replies[2].size();
  host.feed(3, "cmd=barrier_in\n");
  ASSERT_EQ(rec.barriers.size(), 1u);
  EXPECT_EQ(rec.barriers[0].first, 1u);
  EXPECT_EQ(rec.barriers[0].second, (std::vector<PmiKv>{{"card-2", "ab"}, {"card-3", "bb"}}));
  EXPECT_EQ(rec.replies[2].size(), replies_before);  // held until the job-wide barrier
  ASSERT_TRUE(host.barrier_complete(1, {{"card-0", "x"}, {"card-2", "ab"}}));
  EXPECT_EQ(rec.last(2), "cmd=barrier_out rc=0\n");
  EXPECT_EQ(rec.last(3), "cmd=barrier_out rc=0\n");
  host.feed(2, "cmd=get kvsname=job7 key=card-0\n");
  EXPECT_EQ(rec.last(2), "cmd=get_result rc=0 value=x\n");
  EXPECT_EQ(host.barriers_done(), 1u);
  // A stale or repeated completion is refused.
  EXPECT_FALSE(host.barrier_complete(1, {}));
  // The second barrier has no puts and epoch 2.
  host.feed(2, "cmd=barrier_in\n");
  host.feed(3, "cmd=barrier_in\n");
  ASSERT_EQ(rec.barriers.size(), 2u);
  EXPECT_EQ(rec.barriers[1].first, 2u);
  EXPECT_TRUE(rec.barriers[1].second.empty());
}

TEST(PmiHost, AbortCarriesTheExitCode) {
  Recorder rec;
  PmiHost host(two_rank_host(), rec.events());
  host.feed(3, "cmd=init pmi_version=1 pmi_subversion=1\ncmd=abort exitcode=13\n");
  EXPECT_EQ(rec.aborts, (std::vector<std::string>{"3:13:"}));
  host.closed(3);  // the socket closing after an abort is not a second failure
  EXPECT_TRUE(rec.failures.empty());
}

TEST(PmiHost, ClosingBeforeFinalizeIsAFailureOnlyAfterInit) {
  Recorder rec;
  PmiHost host(two_rank_host(), rec.events());
  host.closed(2);  // never spoke PMI: not an MPI program, a normal end
  EXPECT_TRUE(rec.failures.empty());
  host.feed(3, "cmd=init pmi_version=1 pmi_subversion=1\n");
  host.closed(3);
  ASSERT_EQ(rec.failures.size(), 1u);
  EXPECT_NE(rec.failures[0].find("3: its PMI connection closed before PMI_Finalize"),
            std::string::npos);

  Recorder ok;
  PmiHost h2(two_rank_host(), ok.events());
  h2.feed(2, "cmd=init pmi_version=1 pmi_subversion=1\ncmd=finalize\n");
  EXPECT_EQ(ok.last(2), "cmd=finalize_ack rc=0\n");
  EXPECT_TRUE(h2.finalized(2));
  h2.closed(2);
  EXPECT_TRUE(ok.failures.empty());
}

TEST(PmiHost, RefusesUnsupportedCommandsWithNonZeroRc) {
  Recorder rec;
  PmiHost host(two_rank_host(), rec.events());
  host.feed(2, "mcmd=spawn\nnprocs=1\nexecname=a.out\nendcmd\n");
  EXPECT_EQ(rec.last(2).substr(0, 28), "cmd=spawn_result rc=1 errmsg");
  host.feed(2, "cmd=publish_name service=s port=p\n");
  EXPECT_EQ(rec.last(2).substr(0, 26), "cmd=publish_result rc=1 ms");
  host.feed(2, "cmd=lookup_name service=s\n");
  EXPECT_EQ(rec.last(2).substr(0, 25), "cmd=lookup_result rc=1 ms");
  host.feed(2, "cmd=frobnicate\n");
  EXPECT_EQ(rec.last(2).substr(0, 29), "cmd=frobnicate_result rc=1 ms");
  EXPECT_TRUE(rec.failures.empty());
}

TEST(PmiHost, GarbageOrTalkingInsideABarrierFailsTheRank) {
  Recorder rec;
  PmiHost host(two_rank_host(), rec.events());
  host.feed(2, "GET / HTTP/1.1\n");
  ASSERT_EQ(rec.failures.size(), 1u);
  EXPECT_NE(rec.failures[0].find("2: PMI protocol error"), std::string::npos);
  host.feed(3, "cmd=barrier_in\ncmd=get_maxes\n");
  ASSERT_EQ(rec.failures.size(), 2u);
  EXPECT_TRUE(rec.barriers.empty());
  host.feed(2, "cmd=barrier_in\n");  // a dead rank is not heard any more
  EXPECT_TRUE(rec.barriers.empty());
}

// A rank that puts without end meets the host's bound on the key-value space: the put that
// would pass it fails the rank (naming the bound) and is not kept; the other rank goes on.
// Every host's puts that a barrier brings count too.
TEST(PmiHost, APutPastTheStoreLimitFailsTheRankAndIsNotKept) {
  Recorder rec;
  PmiHostConfig cfg = two_rank_host();
  cfg.store_limit = 20;
  PmiHost host(cfg, rec.events());
  host.feed(2, "cmd=put kvsname=job7 key=k2 value=0123456789\n");  // 12 bytes
  EXPECT_EQ(rec.last(2), "cmd=put_result rc=0\n");
  host.feed(2, "cmd=put kvsname=job7 key=k2 value=012345678901234567\n");  // replaces: 20
  EXPECT_EQ(rec.last(2), "cmd=put_result rc=0\n");
  EXPECT_EQ(host.bytes(), 20u);
  host.feed(3, "cmd=put kvsname=job7 key=k3 value=\n");  // 2 more: past the bound
  ASSERT_EQ(rec.failures.size(), 1u);
  EXPECT_NE(rec.failures[0].find("3: its puts passed the 64 MiB the job's PMI key-value space "
                                 "holds at most"),
            std::string::npos)
      << rec.failures[0];
  EXPECT_EQ(host.bytes(), 20u);
  host.feed(3, "cmd=put kvsname=job7 key=k4 value=x\n");  // a failed rank is not heard
  EXPECT_EQ(host.bytes(), 20u);
  host.feed(2, "cmd=get kvsname=job7 key=k3\n");
  EXPECT_EQ(rec.last(2).substr(0, 22), "cmd=get_result rc=1 ms");

  PmiHost other(cfg, rec.events());
  other.feed(2, "cmd=barrier_in\n");
  other.feed(3, "cmd=barrier_in\n");
  ASSERT_TRUE(other.barrier_complete(1, {{"far-host-key", "01234567"}}));  // 20 bytes
  other.feed(2, "cmd=put kvsname=job7 key=a value=b\n");
  EXPECT_EQ(rec.failures.size(), 2u);
}

// MPICH's PMI_Spawn_multiple, as simple_pmi.c writes it: one mcmd block per command, each
// numbered (spawnssofar of totspawns) and carrying the preput pairs; one reply at the end.
std::string spawn_block(int sofar, int total, const std::string& exe, int nprocs,
                        const std::vector<std::string>& args, const std::string& info) {
  std::string b = "mcmd=spawn\nnprocs=" + std::to_string(nprocs) + "\nexecname=" + exe +
                  "\ntotspawns=" + std::to_string(total) +
                  "\nspawnssofar=" + std::to_string(sofar) + "\n";
  for (size_t i = 0; i < args.size(); ++i)
    b += "arg" + std::to_string(i + 1) + "=" + args[i] + "\n";
  b += "argcnt=" + std::to_string(args.size()) + "\n";
  b += "preput_num=1\npreput_key_0=PARENT_ROOT_PORT_NAME\npreput_val_0=tag#0$port#1$\n";
  b += info.empty() ? "info_num=0\n" : "info_num=1\ninfo_key_0=wdir\ninfo_val_0=" + info + "\n";
  return b + "endcmd\n";
}

TEST(PmiHost, ASpawnOfTwoCommandsIsHandedOnWholeAndAnsweredOnce) {
  Recorder rec;
  std::vector<std::pair<int, PmiSpawnRequest>> asked;
  PmiHostEvents ev = rec.events();
  ev.spawn = [&](int rank, PmiSpawnRequest r) { asked.emplace_back(rank, std::move(r)); };
  PmiHost host(two_rank_host(), ev);
  host.feed(2, "cmd=init pmi_version=1 pmi_subversion=1\n");
  const size_t before = rec.replies[2].size();
  host.feed(2, spawn_block(1, 2, "/bin/a", 1, {"x", "y z"}, "/tmp"));
  EXPECT_TRUE(asked.empty()) << "one block of two";
  EXPECT_EQ(rec.replies[2].size(), before) << "no reply between the blocks";
  host.feed(2, spawn_block(2, 2, "b", 3, {}, ""));
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0].first, 2);
  const PmiSpawnRequest want{{{"/bin/a", {"x", "y z"}, 1, {{"wdir", "/tmp"}}}, {"b", {}, 3, {}}},
                             {{"PARENT_ROOT_PORT_NAME", "tag#0$port#1$"}}};
  EXPECT_EQ(asked[0].second, want);
  EXPECT_EQ(rec.replies[2].size(), before) << "the reply waits for the processes";
  host.feed(2, "cmd=get_maxes\n");  // talking while the spawn is out breaks the protocol
  ASSERT_EQ(rec.failures.size(), 1u);
  EXPECT_NE(rec.failures[0].find("while waiting for a spawn"), std::string::npos);

  host.feed(3, spawn_block(1, 1, "c", 2, {}, ""));
  ASSERT_EQ(asked.size(), 2u);
  host.spawn_done(3, "");
  EXPECT_EQ(rec.last(3), "cmd=spawn_result rc=0\n");
  host.feed(3, spawn_block(1, 1, "c", 2, {}, ""));
  host.spawn_done(3, "asks for 2 process(es), but no slot is free");
  EXPECT_EQ(rec.last(3),
            "cmd=spawn_result rc=1 errmsg=asks_for_2_process(es),_but_no_slot_is_free\n");
  host.spawn_done(3, "");  // not waiting: nothing
  EXPECT_EQ(rec.last(3).substr(0, 21), "cmd=spawn_result rc=1");
}

TEST(PmiHost, MalformedOrOutOfOrderSpawnBlocksFailTheRank) {
  for (const std::string& bad :
       {spawn_block(2, 2, "a", 1, {}, ""),  // the second block first
        std::string("mcmd=spawn\nnprocs=0\nexecname=a\ntotspawns=1\nspawnssofar=1\n"
                    "argcnt=0\npreput_num=0\ninfo_num=0\nendcmd\n"),  // no process
        std::string("mcmd=spawn\nnprocs=1\nexecname=a\ntotspawns=1\nspawnssofar=1\n"
                    "argcnt=2\narg1=x\npreput_num=0\ninfo_num=0\nendcmd\n"),  // arg2 missing
        spawn_block(1, 2, "a", 1, {}, "") + "cmd=get_maxes\n"}) {  // a command between blocks
    Recorder rec;
    PmiHostEvents ev = rec.events();
    int asked = 0;
    ev.spawn = [&](int, const PmiSpawnRequest&) { ++asked; };
    PmiHost host(two_rank_host(), ev);
    host.feed(2, bad);
    EXPECT_EQ(rec.failures.size(), 1u) << bad;
    if (!rec.failures.empty()) {
      EXPECT_NE(rec.failures[0].find("2: PMI protocol error"), std::string::npos)
          << rec.failures[0];
    }
    EXPECT_EQ(asked, 0) << bad;
  }
}

// A spawned group's KVS holds the spawner's preput pairs from the start.
TEST(PmiHost, APreputPairIsThereBeforeAnyBarrier) {
  Recorder rec;
  PmiHostConfig c = two_rank_host();
  c.preput = {{"PARENT_ROOT_PORT_NAME", "port-1"}};
  PmiHost host(c, rec.events());
  host.feed(3, "cmd=get kvsname=job7 key=PARENT_ROOT_PORT_NAME\n");
  EXPECT_EQ(rec.last(3), "cmd=get_result rc=0 value=port-1\n");
}

// ---- job aggregator -----------------------------------------------------------------------

// A spawned group's barrier gathers from the hosts that run some of it, by their numbers.
TEST(PmiJob, OverSomeHostsGathersFromThoseAlone) {
  std::vector<uint32_t> done;
  PmiJob job(std::vector<int>{1, 3},
             [&](uint32_t e, const std::vector<PmiKv>&) { done.push_back(e); });
  EXPECT_FALSE(job.host_barrier(0, 1, {}));  // not one of its hosts
  ASSERT_TRUE(job.host_barrier(3, 1, {{"k", "v"}}));
  EXPECT_EQ(job.missing_hosts(), (std::vector<int>{1}));
  EXPECT_FALSE(job.host_barrier(3, 1, {}));  // twice
  ASSERT_TRUE(job.host_barrier(1, 1, {}));
  EXPECT_EQ(done, (std::vector<uint32_t>{1}));
}

TEST(PmiJob, CompletesWhenEveryHostReportedAndMergesInHostOrder) {
  std::vector<std::pair<uint32_t, std::vector<PmiKv>>> done;
  PmiJob job(3, [&](uint32_t e, const std::vector<PmiKv>& kv) { done.emplace_back(e, kv); });
  ASSERT_TRUE(job.host_barrier(2, 1, {{"c", "2"}, {"dup", "late"}}));
  ASSERT_TRUE(job.host_barrier(0, 1, {{"a", "0"}, {"dup", "early"}}));
  EXPECT_TRUE(done.empty());
  EXPECT_EQ(job.missing_hosts(), (std::vector<int>{1}));
  EXPECT_FALSE(job.host_barrier(0, 1, {}));  // twice
  ASSERT_TRUE(job.host_barrier(1, 1, {}));
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].first, 1u);
  EXPECT_EQ(done[0].second, (std::vector<PmiKv>{{"a", "0"}, {"dup", "late"}, {"c", "2"}}));
  EXPECT_EQ(job.epoch(), 2u);
  EXPECT_FALSE(job.host_barrier(0, 1, {}));  // stale epoch
  EXPECT_FALSE(job.host_barrier(3, 2, {}));  // unknown host
  EXPECT_FALSE(job.host_barrier(-1, 2, {}));
}

TEST(PmiJob, DrivesHostsEndToEnd) {
  // Two hosts, two ranks each, wired through a PmiJob as ferryd and the front end would.
  Recorder r0, r1;
  PmiHostConfig c0 = two_rank_host(), c1 = two_rank_host();
  c0.ranks = {0, 1};
  std::vector<PmiHost*> hosts;
  PmiJob job(2, [&](uint32_t e, const std::vector<PmiKv>& kv) {
    for (auto* h : hosts) ASSERT_TRUE(h->barrier_complete(e, kv));
  });
  PmiHostEvents e0 = r0.events(), e1 = r1.events();
  e0.barrier_ready = [&](uint32_t e, std::vector<PmiKv> p) {
    ASSERT_TRUE(job.host_barrier(0, e, std::move(p)));
  };
  e1.barrier_ready = [&](uint32_t e, std::vector<PmiKv> p) {
    ASSERT_TRUE(job.host_barrier(1, e, std::move(p)));
  };
  PmiHost h0(c0, e0), h1(c1, e1);
  hosts = {&h0, &h1};
  for (int r = 0; r < 4; ++r) {
    PmiHost& h = r < 2 ? h0 : h1;
    h.feed(r, "cmd=put kvsname=job7 key=card-" + std::to_string(r) + " value=v" +
                  std::to_string(r) + "\ncmd=barrier_in\n");
  }
  EXPECT_EQ(r0.last(0), "cmd=barrier_out rc=0\n");
  EXPECT_EQ(r1.last(3), "cmd=barrier_out rc=0\n");
  h0.feed(1, "cmd=get kvsname=job7 key=card-3\n");
  EXPECT_EQ(r0.last(1), "cmd=get_result rc=0 value=v3\n");
  h1.feed(2, "cmd=get kvsname=job7 key=card-0\n");
  EXPECT_EQ(r1.last(2), "cmd=get_result rc=0 value=v0\n");
}

TEST(PmiProcessMapping, CompressesBlocksOfNodes) {
  EXPECT_EQ(pmi_process_mapping({0, 0, 0, 0, 1, 1, 1, 1}), "(vector,(0,2,4))");
  EXPECT_EQ(pmi_process_mapping({0, 1, 1}), "(vector,(0,1,1),(1,1,2))");
  EXPECT_EQ(pmi_process_mapping({0}), "(vector,(0,1,1))");
  EXPECT_EQ(pmi_process_mapping({0, 0, 1, 1, 2, 3, 3}), "(vector,(0,2,2),(2,1,1),(3,1,2))");
  EXPECT_EQ(pmi_process_mapping({0, 1, 0, 1}), "(vector,(0,2,1),(0,2,1))");
}

TEST(PmiProcessMapping, HostConfigFromPlacement) {
  auto hl = parse_host_option("a:1,b:2");
  ASSERT_TRUE(hl);
  auto p = place_ranks(*hl, 3, false);
  ASSERT_TRUE(p);
  auto c = pmi_host_config(*p, 1, "f00d");
  EXPECT_EQ(c.kvsname, "f00d");
  EXPECT_EQ(c.world_size, 3);
  EXPECT_EQ(c.ranks, (std::vector<int>{1, 2}));
  EXPECT_EQ(c.process_mapping, "(vector,(0,1,1),(1,1,2))");
  EXPECT_EQ(c.appnums, (std::vector<int>{0, 0}));  // one program: every rank in part 0
}

}  // namespace
}  // namespace ferry
