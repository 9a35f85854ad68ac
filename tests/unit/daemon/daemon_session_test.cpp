// ferryd's session with the front end, the test playing ferryrun over pipes and a fake
// spawner playing the ranks: stdin before the job, a Terminate while ranks are starting,
// output that outlives a rank, the kill grace, and the front end going away.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include "daemon_front_end.hpp"
#include "fake_spawner.hpp"
#include "ferry/daemon/sweeper.hpp"

namespace ferry {
namespace {

using std::chrono::milliseconds;
using test_support::FakeSpawner;
using test_support::FrontEnd;
using Clock = std::chrono::steady_clock;

class DaemonSession : public ::testing::Test {
 protected:
  // A pipe to a fake child that closed its end must not kill the test.
  void SetUp() override { ::signal(SIGPIPE, SIG_IGN); }

  // `n` ranks 0..n-1 of a job of `n`, all on this host; nothing is executed.
  static wire::HostSpec spec(int n, const std::string& job) {
    wire::HostSpec s;
    s.job_id = job;
    s.argv = {"/fake/rank"};
    s.world_size = n;
    s.binding.bind_to = BindTo::kNone;
    for (int r = 0; r < n; ++r) s.ranks.push_back({r, {}, {}});
    return s;
  }

  static long ms_between(Clock::time_point a, Clock::time_point b) {
    return static_cast<long>(std::chrono::duration_cast<milliseconds>(b - a).count());
  }

  // Everything readable from `fd` until EOF (true) or `limit`.
  static bool read_to_eof(FrontEnd& fe, int fd, std::string& got) {
    ::fcntl(fd, F_SETFL, O_NONBLOCK);
    return fe.run_until([&] {
      char buf[4096];
      ssize_t n = 0;
      while ((n = ::read(fd, buf, sizeof buf)) > 0) got.append(buf, static_cast<size_t>(n));
      return n == 0;
    });
  }

  FakeSpawner ranks;
};

TEST_F(DaemonSession, StdinBeforeTheHostSpecReachesTheStdinRank) {
  FrontEnd fe(&ranks);
  fe.send(wire::Stdin{"hello "});
  fe.send(wire::Stdin{"world"});
  fe.send(wire::Stdin{""});  // EOF
  fe.run_for(milliseconds(50));
  ASSERT_TRUE(fe.all<wire::StdinAck>().empty()) << "nothing can be written yet";
  auto s = spec(2, "early-stdin");
  s.stdin_rank = 1;
  fe.send(s);
  ASSERT_TRUE(fe.run_until([&] { return fe.all<wire::Started>().size() == 2; }));

  std::string got;
  ASSERT_TRUE(read_to_eof(fe, ranks.children()[1]->in.get(), got))
      << "the stdin rank must see EOF after the early bytes";
  EXPECT_EQ("hello world", got);
  std::string none;
  EXPECT_TRUE(read_to_eof(fe, ranks.children()[0]->in.get(), none));
  EXPECT_EQ("", none) << "only the stdin rank reads stdin";
  ASSERT_TRUE(fe.run_until([&] {
    size_t acked = 0;
    for (auto& a : fe.all<wire::StdinAck>()) acked += a.bytes;
    return acked == 11;
  })) << "every byte written is acknowledged";
}

TEST_F(DaemonSession, TerminateWhileLaunchingStartsNoMoreRanks) {
  constexpr int kRanks = 8;
  FrontEnd fe(&ranks);
  // The Terminate arrives while the second rank is being started.
  ranks.on_spawn = [&](size_t before) {
    if (before == 1) fe.send(wire::Terminate{5000});
  };
  fe.send(spec(kRanks, "terminate-launching"));
  ASSERT_TRUE(fe.run_until([&] { return fe.first<wire::Done>().has_value(); }));

  const size_t spawned = ranks.children().size();
  EXPECT_LT(spawned, size_t(kRanks)) << "ranks were started after the Terminate was read";
  EXPECT_LE(spawned, 3u) << "the Terminate waited for more than a turn";
  auto started = fe.all<wire::Started>();
  EXPECT_EQ(spawned, started.size());
  auto exits = fe.all<wire::Exited>();
  ASSERT_EQ(size_t(kRanks), exits.size()) << "every rank is reported, started or not";
  std::vector<int> seen(kRanks, 0);
  for (auto& e : exits) {
    ASSERT_GE(e.rank, 0);
    ASSERT_LT(e.rank, kRanks);
    ++seen[e.rank];
    const bool was_started = e.rank < static_cast<int>(spawned);
    // Started ranks got the Terminate's SIGTERM (the fake dies of it); the rest are
    // reported killed without running.
    EXPECT_EQ(was_started ? SIGTERM : SIGKILL, e.signal) << "rank " << e.rank;
  }
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(1, seen[r]) << "rank " << r;
  for (const auto& sent : ranks.signals())
    EXPECT_LT(sent.pgid, FakeSpawner::kFirstPid + static_cast<pid_t>(spawned));
  EXPECT_EQ(fe.frames().size() - 1, fe.index_of<wire::Done>()) << "Done comes last";
}

TEST_F(DaemonSession, ExitWaitsForOutputHeldByABackgroundChildThenTheDrainTimeout) {
  FrontEnd fe(&ranks);
  fe.send(spec(1, "drain"));
  ASSERT_TRUE(fe.run_until([&] { return fe.all<wire::Started>().size() == 1; }));
  auto& rank = *ranks.children()[0];
  ASSERT_EQ(6, ::write(rank.out.get(), "early\n", 6));
  // The rank exits, but a child it left in the background still holds its stdout.
  ranks.exit(rank, 3, /*keep_pipes=*/true);
  const auto exited_at = Clock::now();
  fe.run_for(milliseconds(300));
  EXPECT_TRUE(fe.all<wire::Exited>().empty()) << "reported while its output may still come";
  ASSERT_EQ(5, ::write(rank.out.get(), "late\n", 5));
  ASSERT_TRUE(fe.run_until([&] { return fe.first<wire::Exited>().has_value(); }));

  const long waited = ms_between(exited_at, *fe.first<wire::Exited>());
  EXPECT_GE(waited, 900) << "the exit must wait for the drain timeout (1 s)";
  EXPECT_LE(waited, 3000);
  EXPECT_EQ("early\nlate\n", fe.output(0, StreamId::kStdout, fe.index_of<wire::Exited>()))
      << "output written before the drain timeout comes before the exit";
  auto exits = fe.all<wire::Exited>();
  ASSERT_EQ(1u, exits.size());
  EXPECT_EQ(3, exits[0].exit_code);
  EXPECT_EQ(0, exits[0].signal);
  EXPECT_TRUE(fe.run_until([&] { return fe.stopped(); }));
  EXPECT_EQ(0, fe.exit_code());
}

TEST_F(DaemonSession, TerminateGivesTheGraceBetweenSigtermAndSigkill) {
  ranks.ignore_sigterm = true;
  FrontEnd fe(&ranks);
  fe.send(spec(2, "kill-grace"));
  ASSERT_TRUE(fe.run_until([&] { return fe.all<wire::Started>().size() == 2; }));
  fe.send(wire::Terminate{400});
  ASSERT_TRUE(fe.run_until([&] { return fe.stopped(); }));

  const auto& sent = ranks.signals();
  ASSERT_EQ(4u, sent.size());
  for (int i : {0, 1}) {
    EXPECT_EQ(SIGTERM, sent[i].signo);
    EXPECT_EQ(SIGKILL, sent[i + 2].signo);
    EXPECT_EQ(sent[i].pgid, sent[i + 2].pgid);
    const long grace = ms_between(sent[i].at, sent[i + 2].at);
    EXPECT_GE(grace, 390) << "SIGKILL before the grace was over";
    EXPECT_LE(grace, 2000);
  }
  auto exits = fe.all<wire::Exited>();
  ASSERT_EQ(2u, exits.size());
  for (auto& e : exits) EXPECT_EQ(SIGKILL, e.signal);
  EXPECT_TRUE(fe.first<wire::Done>());
  EXPECT_EQ(0, fe.exit_code()) << "a job ended on the front end's word is a served job";
}

TEST_F(DaemonSession, FrontEndGoneTermsThenKillsAfterTheJobsKillGraceAndFails) {
  ranks.ignore_sigterm = true;
  FrontEnd fe(&ranks);
  auto s = spec(2, "front-gone");
  s.kill_grace_ms = 1500;  // longer than ferryd would wait on its own
  fe.send(s);
  ASSERT_TRUE(fe.run_until([&] { return fe.all<wire::Started>().size() == 2; }));
  fe.hang_up();
  ASSERT_TRUE(fe.run_until([&] { return fe.stopped(); }, milliseconds(6000)));

  const auto& sent = ranks.signals();
  ASSERT_EQ(4u, sent.size());
  for (int i : {0, 1}) {
    EXPECT_EQ(SIGTERM, sent[i].signo);
    EXPECT_EQ(SIGKILL, sent[i + 2].signo);
    const long grace = ms_between(sent[i].at, sent[i + 2].at);
    EXPECT_GE(grace, 1490) << "the ranks must get the job's --kill-grace to finish";
    EXPECT_LE(grace, 3000);
  }
  EXPECT_NE(0, fe.exit_code()) << "ferryd lost its front end: not a served job";
}

// Output copied (no splice) over a socket, as to a local ferryrun: ferryd stops reading the rank
// pipes while a megabyte waits for the front end and reads them again once it caught up. When the
// last pipe's end is found just then, the exit reports and Done it queues may find the socket
// full again: ferryd must write them before it exits. Whether they do depends on how full the
// socket is at that moment, so the ranks write several amounts (on Linux 6.1 with the default
// socket buffers, 800000, 875000 and 950000 bytes a pipe lose them without the fix).
TEST_F(DaemonSession, CopiedOutputEndsWithEveryExitReportAndDone) {
  constexpr int kRanks = 3;
  const std::string chunk(size_t{4} << 10, 'x');
  for (size_t each = 700000; each < 1000000; each += 25000) {
    FakeSpawner spawner;
    FrontEnd fe(&spawner, {.socket = true, .output_copy = true});
    fe.send(spec(kRanks, "copied-" + std::to_string(each)));
    ASSERT_TRUE(fe.run_until([&] { return fe.all<wire::Started>().size() == kRanks; }));
    // Every rank fills its pipes and exits; its bytes wait there for ferryd.
    for (const auto& rank : spawner.children()) {
      for (int fd : {rank->out.get(), rank->err.get()}) {
        ::fcntl(fd, F_SETFL, O_NONBLOCK);
        for (size_t n = 0; n < each;) {
          const ssize_t w = ::write(fd, chunk.data(), std::min(chunk.size(), each - n));
          ASSERT_GT(w, 0) << "a pipe of ferryd's ranks holds less than " << each << " bytes";
          n += static_cast<size_t>(w);
        }
      }
      spawner.exit(*rank, 0);
    }
    ASSERT_TRUE(fe.run_until([&] { return fe.stopped(); }, milliseconds(20000)));
    fe.run_for(milliseconds(1));  // reads what is left in the socket
    EXPECT_EQ(kRanks, static_cast<int>(fe.all<wire::Exited>().size()))
        << each << " bytes a pipe: ferryd stopped with exit reports unwritten";
    EXPECT_TRUE(fe.first<wire::Done>().has_value())
        << each << " bytes a pipe: ferryd stopped with its Done unwritten";
    for (int r = 0; r < kRanks; ++r) {
      EXPECT_EQ(each, fe.output(r, StreamId::kStdout).size()) << each << ", rank " << r;
      EXPECT_EQ(each, fe.output(r, StreamId::kStderr).size()) << each << ", rank " << r;
    }
    EXPECT_EQ(0, fe.exit_code());
  }
}

TEST_F(DaemonSession, FrontEndGoneExitsAsSoonAsTheRanksEnded) {
  FrontEnd fe(&ranks);  // ranks that end on SIGTERM
  auto s = spec(2, "front-gone-quick");
  s.kill_grace_ms = 30000;
  fe.send(s);
  ASSERT_TRUE(fe.run_until([&] { return fe.all<wire::Started>().size() == 2; }));
  const auto hung_up = Clock::now();
  fe.hang_up();
  ASSERT_TRUE(fe.run_until([&] { return fe.stopped(); }, milliseconds(6000)));
  EXPECT_LE(ms_between(hung_up, Clock::now()), 1000)
      << "a long grace must not keep ferryd once its ranks are gone";
  ASSERT_EQ(2u, ranks.signals().size());
  for (const auto& sent : ranks.signals()) EXPECT_EQ(SIGTERM, sent.signo);
  EXPECT_EQ(1, fe.exit_code());
}

TEST_F(DaemonSession, FrontEndGoneBeforeTheHostSpecExitsAtOnce) {
  FrontEnd fe(&ranks);
  fe.hang_up();
  ASSERT_TRUE(fe.run_until([&] { return fe.stopped(); }, milliseconds(2000)));
  EXPECT_EQ(1, fe.exit_code());
  EXPECT_TRUE(ranks.children().empty());
}

// The same over real processes: a shell that exits while a background child holds its
// stdout, the child swept with the job once the exit was reported.
TEST_F(DaemonSession, RealRankExitWaitsForTheDrainAndItsBackgroundChildIsSwept) {
  FrontEnd fe(nullptr);
  auto s = spec(1, "real-drain");
  s.argv = {"/bin/sh", "-c", "echo early; (echo late; exec sleep 30) & exit 3"};
  fe.send(s);
  ASSERT_TRUE(fe.run_until([&] { return fe.stopped(); }));
  auto exits = fe.all<wire::Exited>();
  ASSERT_EQ(1u, exits.size());
  EXPECT_EQ(3, exits[0].exit_code);
  const long waited = ms_between(*fe.first<wire::Started>(), *fe.first<wire::Exited>());
  EXPECT_GE(waited, 900) << "reported before the drain timeout";
  EXPECT_EQ("early\nlate\n", fe.output(0, StreamId::kStdout));
  EXPECT_TRUE(fe.first<wire::Done>());
  // The sweep sent SIGKILL; a process waiting on the disk (a loaded machine) dies once that
  // read completes, so it may still be listed a moment after ferryd said Done.
  const std::string tag = "real-drain." + std::to_string(::getpid());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!find_tagged_processes(tag, ::getpid()).empty() &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(find_tagged_processes(tag, ::getpid()).empty())
      << "the background child (sleep 30) is left 5 s after the sweep";
}

// The value of `name` in a child's environment ("" when unset).
std::string env_of(const FakeSpawner::Child& c, const std::string& name) {
  for (const auto& kv : c.env)
    if (kv.starts_with(name + "=")) return kv.substr(name.size() + 1);
  return "";
}

// Writes `text` to a fake child's PMI socket and waits for a reply line containing `want`.
std::string pmi_talk(FrontEnd& fe, const FakeSpawner::Child& c, const std::string& text,
                     const std::string& want) {
  const int fd = c.kept.at(0).get();
  ::fcntl(fd, F_SETFL, O_NONBLOCK);
  if (!text.empty()) {
    EXPECT_EQ(static_cast<ssize_t>(text.size()), ::write(fd, text.data(), text.size()));
  }
  std::string got;
  fe.run_until([&] {
    char buf[4096];
    ssize_t n = 0;
    while ((n = ::read(fd, buf, sizeof buf)) > 0) got.append(buf, static_cast<size_t>(n));
    return got.find(want) != std::string::npos;
  });
  return got;
}

// MPICH's spawn through ferryd: a rank's mcmd=spawn goes to the front end as one PmiSpawn;
// the PmiSpawnJob's processes start as a group of their own (PMI_SPAWNED, their rank and size
// there, a PMI socket each, the preput pair in their KVS) and barrier among themselves under
// their group's name; the rank hears its spawn_result once the front end answers.
TEST_F(DaemonSession, APmiSpawnsProcessesFormAGroupOfTheirOwn) {
  FrontEnd fe(&ranks);
  auto s = spec(1, "pmi-spawn");
  s.pmi = true;
  fe.send(s);
  ASSERT_TRUE(fe.run_until([&] { return ranks.children().size() == 1; }));
  const FakeSpawner::Child& parent = *ranks.children()[0];
  ASSERT_EQ(parent.kept.size(), 1u) << "the rank's PMI socket";
  EXPECT_EQ(env_of(parent, "PMI_SPAWNED"), "");
  pmi_talk(fe, parent, "cmd=init pmi_version=1 pmi_subversion=1\n", "response_to_init");
  const std::string block =
      "mcmd=spawn\nnprocs=2\nexecname=/fake/child\ntotspawns=1\nspawnssofar=1\n"
      "arg1=x\nargcnt=1\npreput_num=1\npreput_key_0=PARENT_ROOT_PORT_NAME\n"
      "preput_val_0=port-1\ninfo_num=0\nendcmd\n";
  ASSERT_EQ(static_cast<ssize_t>(block.size()),
            ::write(parent.kept[0].get(), block.data(), block.size()));
  ASSERT_TRUE(fe.run_until([&] { return !fe.all<wire::PmiSpawn>().empty(); }));
  const wire::PmiSpawn ask = fe.all<wire::PmiSpawn>()[0];
  EXPECT_EQ(ask.rank, 0);
  ASSERT_EQ(ask.apps.size(), 1u);
  EXPECT_EQ(ask.apps[0].argv, (std::vector<std::string>{"/fake/child", "x"}));
  EXPECT_EQ(ask.apps[0].maxprocs, 2u);
  EXPECT_EQ(ask.preput_keys, (std::vector<std::string>{"PARENT_ROOT_PORT_NAME"}));
  EXPECT_EQ(ask.preput_values, (std::vector<std::string>{"port-1"}));

  wire::PmiSpawnJob job;
  job.kvsname = "pmi-spawn.spawn1";
  job.size = 2;
  job.process_mapping = "(vector,(0,1,2))";
  job.preput_keys = ask.preput_keys;
  job.preput_values = ask.preput_values;
  for (int i = 0; i < 2; ++i) {
    wire::RankLaunch rl;
    rl.rank = 1 + i;  // the job's numbers, past its world
    rl.argv = ask.apps[0].argv;
    rl.pmix_nspace = job.kvsname;
    rl.pmix_rank = i;
    job.ranks.push_back(rl);
  }
  fe.send(job);
  ASSERT_TRUE(fe.run_until([&] { return ranks.children().size() == 3; }));
  for (int i = 0; i < 2; ++i) {
    const FakeSpawner::Child& c = *ranks.children()[1 + static_cast<size_t>(i)];
    EXPECT_EQ(c.argv, (std::vector<std::string>{"/fake/child", "x"}));
    EXPECT_EQ(env_of(c, "PMI_SPAWNED"), "1");
    EXPECT_EQ(env_of(c, "PMI_RANK"), std::to_string(i));
    EXPECT_EQ(env_of(c, "PMI_SIZE"), "2");
    EXPECT_EQ(env_of(c, "MPI_LOCALRANKID"), std::to_string(i));
    EXPECT_EQ(env_of(c, "MPI_LOCALNRANKS"), "2");
    ASSERT_EQ(c.kept.size(), 1u) << "child " << i << "'s PMI socket";
  }
  fe.send(wire::PmiSpawnDone{0, job.kvsname, {}});
  EXPECT_NE(pmi_talk(fe, parent, "", "cmd=spawn_result rc=0").find("cmd=spawn_result rc=0"),
            std::string::npos);

  const FakeSpawner::Child& c0 = *ranks.children()[1];
  const FakeSpawner::Child& c1 = *ranks.children()[2];
  pmi_talk(fe, c0, "cmd=init pmi_version=1 pmi_subversion=1\n", "response_to_init");
  EXPECT_NE(pmi_talk(fe, c0, "cmd=get kvsname=x key=PARENT_ROOT_PORT_NAME\n", "get_result")
                .find("value=port-1"),
            std::string::npos);
  EXPECT_NE(pmi_talk(fe, c1, "cmd=get kvsname=x key=PMI_process_mapping\n", "get_result")
                .find("value=(vector,(0,1,2))"),
            std::string::npos);
  pmi_talk(fe, c0, "cmd=put kvsname=x key=k0 value=v0\ncmd=barrier_in\n", "put_result");
  pmi_talk(fe, c1, "cmd=barrier_in\n", "");
  ASSERT_TRUE(fe.run_until([&] { return !fe.all<wire::PmiBarrier>().empty(); }));
  const wire::PmiBarrier b = fe.all<wire::PmiBarrier>()[0];
  EXPECT_EQ(b.kvsname, job.kvsname) << "the group's barrier, not the job's";
  EXPECT_EQ(b.epoch, 1u);
  EXPECT_EQ(b.keys, (std::vector<std::string>{"k0"}));
  wire::PmiBarrierDone done;
  done.epoch = 1;
  done.kvsname = job.kvsname;
  done.keys = {"k0"};
  done.values = {"v0"};
  fe.send(done);
  EXPECT_NE(pmi_talk(fe, c1, "", "barrier_out").find("cmd=barrier_out rc=0"), std::string::npos);
  EXPECT_FALSE(fe.stopped()) << "ferryd goes on";
  for (const auto& c : ranks.children()) ranks.exit(*c, 0);
}

}  // namespace
}  // namespace ferry

namespace ferry {
namespace {

class DaemonAttempts : public ::testing::Test {
 protected:
  void SetUp() override { ::signal(SIGPIPE, SIG_IGN); }
  static wire::HostSpec spec(int n, uint32_t attempt) {
    wire::HostSpec s;
    s.job_id = "attempts";
    s.argv = {"/fake/rank"};
    s.world_size = n;
    s.binding.bind_to = BindTo::kNone;
    s.attempt = attempt;
    s.keep_serving = true;
    s.error_files = true;
    for (int r = 0; r < n; ++r) s.ranks.push_back({r, {}, {}});
    return s;
  }
  static std::string env_of(const test_support::FakeSpawner::Child& c, const std::string& name) {
    for (const auto& kv : c.env)
      if (kv.starts_with(name + "=")) return kv.substr(name.size() + 1);
    return "";
  }
  test_support::FakeSpawner ranks;
};

// A ferryd that may serve another attempt says Done and waits; the next HostSpec starts the ranks
// again on the same connection; the front end's EOF then ends ferryd cleanly. What a failed rank
// wrote to its TORCHELASTIC_ERROR_FILE travels with its Exited.
TEST_F(DaemonAttempts, DoneThenTheNextAttemptThenEof) {
  test_support::FrontEnd fe(&ranks);
  fe.send(spec(2, 0));
  ASSERT_TRUE(fe.run_until([&] { return ranks.children().size() == 2; }));
  const std::string file0 = env_of(*ranks.children()[1], "TORCHELASTIC_ERROR_FILE");
  ASSERT_FALSE(file0.empty());
  {
    std::FILE* f = std::fopen(file0.c_str(), "w");
    ASSERT_NE(f, nullptr) << file0;
    std::fputs(R"({"message": {"message": "RuntimeError: boom"}})", f);
    std::fclose(f);
  }
  ranks.exit(*ranks.children()[0], 0);
  ranks.exit(*ranks.children()[1], 3);
  ASSERT_TRUE(fe.run_until([&] { return fe.first<wire::Done>().has_value(); }));
  auto exits = fe.all<wire::Exited>();
  ASSERT_EQ(exits.size(), 2u);
  for (const auto& e : exits)
    EXPECT_EQ(e.error_file, e.rank == 1 ? R"({"message": {"message": "RuntimeError: boom"}})" : "")
        << "rank " << e.rank;
  EXPECT_NE(fe.all<wire::Done>().front().free_port, 0) << "a port for the next attempt's store";
  fe.run_for(milliseconds(100));
  EXPECT_FALSE(fe.stopped()) << "ferryd waits for the next attempt";

  fe.send(spec(2, 1));
  ASSERT_TRUE(fe.run_until([&] { return ranks.children().size() == 4; }));
  const std::string file1 = env_of(*ranks.children()[3], "TORCHELASTIC_ERROR_FILE");
  EXPECT_NE(file1, file0) << "each attempt's rank gets its own error file";
  ranks.exit(*ranks.children()[2], 0);
  ranks.exit(*ranks.children()[3], 0);
  ASSERT_TRUE(fe.run_until([&] { return fe.all<wire::Done>().size() == 2; }));
  EXPECT_EQ(fe.all<wire::Exited>().size(), 4u);
  fe.hang_up();
  ASSERT_TRUE(fe.run_until([&] { return fe.stopped(); }) || fe.stopped());
  EXPECT_EQ(fe.exit_code(), 0) << "EOF after Done is the normal end";
}

// The front end vanishes while ranks run: they are stopped and ferryd exits, even though it would
// have waited for another attempt.
TEST_F(DaemonAttempts, FrontEndGoneEndsFerrydAfterItsRanks) {
  test_support::FrontEnd fe(&ranks);
  auto s = spec(2, 0);
  s.kill_grace_ms = 60000;
  fe.send(s);
  ASSERT_TRUE(fe.run_until([&] { return ranks.children().size() == 2; }));
  fe.hang_up();
  // The fake ranks die of the SIGTERM they get.
  fe.run_until([&] { return fe.stopped(); });
  EXPECT_TRUE(fe.stopped()) << "ferryd must exit once its ranks are gone";
  EXPECT_NE(fe.exit_code(), 0);
}

// A HostSpec while ranks still run is a broken front end.
TEST_F(DaemonAttempts, ASpecWhileRanksRunIsRefused) {
  test_support::FrontEnd fe(&ranks);
  fe.send(spec(1, 0));
  ASSERT_TRUE(fe.run_until([&] { return ranks.children().size() == 1; }));
  fe.send(spec(1, 1));
  ASSERT_TRUE(fe.run_until([&] { return fe.first<wire::Failure>().has_value(); }));
  EXPECT_EQ(fe.all<wire::Failure>().front().message, "a host spec arrived while ranks run");
}

}  // namespace
}  // namespace ferry
