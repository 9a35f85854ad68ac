// ferryd's PMIx server against real PMIx clients: the test plays ferryrun over pipes, ferryd
// starts tests/unit/daemon/pmix_test_client.c as two real ranks of a job of three (the third
// on another host, which the test plays too), and libpmix does the rest: a fence with data
// (one report for the host, answered with every host's data), job facts, a request for the
// remote rank's data (forwarded, and its answer delivered) and the front end's request for a
// local rank's, an abort, and a rank that leaves without PMIx_Finalize. Needs libpmix.so.2
// (Debian's libpmix2, which libpmix-dev brings).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <hwloc.h>
#include <unistd.h>

#include <array>
#include <csignal>
#include <filesystem>
#include <string>
#include <vector>

#include "daemon_front_end.hpp"
#include "ferry/daemon/pmix_server.hpp"

namespace ferry {
namespace {

using std::chrono::milliseconds;
using test_support::FrontEnd;

class DaemonPmix : public ::testing::Test {
 protected:
  void SetUp() override {
    ::signal(SIGPIPE, SIG_IGN);
    if (PmixServer::finalized_before())
      GTEST_SKIP() << "libpmix cannot start a second server in one process: run each of these "
                      "tests alone (CTest does)";
  }

  // Ranks 0 and 1 of a job of 3 (rank 2 is on another host), running the PMIx test client in
  // `mode`.
  static wire::HostSpec spec(const std::string& job, const std::string& mode) {
    wire::HostSpec s;
    s.job_id = job;
    s.argv = {std::string(FERRY_BIN_DIR) + "/pmix_test_client", mode};
    s.world_size = 3;
    s.pmi = true;
    s.binding.bind_to = BindTo::kNone;
    s.node_names = {"pmix-test-host", "pmix-other-host"};
    s.node_of_rank = {0, 0, 1};
    for (int r = 0; r < 2; ++r) s.ranks.push_back({r, {}, {}});
    return s;
  }

  // Answers every fence report of `fe` not answered yet with the data it carried (the other
  // host's rank puts nothing).
  static void answer_fences(FrontEnd& fe, size_t& answered) {
    auto fences = fe.all<wire::PmixFence>();
    for (; answered < fences.size(); ++answered)
      fe.send(wire::PmixFenceDone{{fences[answered].seq, fences[answered].data}});
  }

  // Whether libpmix is loaded in this process (ferryd runs in it here).
  static bool libpmix_loaded() {
    void* h = ::dlopen("libpmix.so.2", RTLD_LAZY | RTLD_NOLOAD);
    if (h) ::dlclose(h);
    return h != nullptr;
  }

  // The directories this process's server prepared (named for its pid), whether or not
  // libpmix started in them.
  static std::vector<std::string> prepared_dirs() {
    std::vector<std::string> out;
    const char* tmp = ::getenv("TMPDIR");
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(tmp && *tmp ? tmp : "/tmp", ec))
      if (e.path().filename().string().starts_with(PmixServer::directory_prefix()))
        out.push_back(e.path());
    return out;
  }

  // The directories of this process's server: libpmix makes its store's folders in it, named
  // with its pid, when it starts (other tests' servers may run beside it).
  static std::vector<std::string> own_server_dirs() {
    std::vector<std::string> out;
    const char* tmp = ::getenv("TMPDIR");
    const std::string mine = "pmix_dstor_ds21_" + std::to_string(::getpid());
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(tmp && *tmp ? tmp : "/tmp", ec))
      if (e.path().filename().string().starts_with("ferry-pmix-") &&
          std::filesystem::exists(e.path() / mine, ec))
        out.push_back(e.path());
    return out;
  }
};

TEST_F(DaemonPmix, TwoRealClientsExchangeDataThroughOneFenceAndFinalize) {
  std::vector<std::string> server_dirs;
  {
    FrontEnd fe(nullptr);
    fe.send(spec("pmix-exchange", "exchange"));
    size_t answered = 0;
    ASSERT_TRUE(fe.run_until(
        [&] {
          if (server_dirs.empty()) server_dirs = own_server_dirs();
          answer_fences(fe, answered);
          return fe.all<wire::Exited>().size() == 2;
        },
        milliseconds(20000)))
        << "stderr 0: " << fe.output(0, StreamId::kStderr)
        << " stderr 1: " << fe.output(1, StreamId::kStderr);
    for (const auto& e : fe.all<wire::Exited>()) {
      EXPECT_EQ(0, e.exit_code) << "rank " << e.rank << ": "
                                << fe.output(e.rank, StreamId::kStderr);
      EXPECT_EQ(0, e.signal);
    }
    // The local ranks' CPUs come from ferry's binding (here: none).
    EXPECT_EQ("rank 0 size 3 local 0 cpus UNBOUND:UNBOUND peer says value-1\n",
              fe.output(0, StreamId::kStdout));
    EXPECT_EQ("rank 1 size 3 local 1 cpus UNBOUND:UNBOUND peer says value-0\n",
              fe.output(1, StreamId::kStdout));
    // One fence report for the host, whatever its rank count, carrying both ranks' data.
    auto fences = fe.all<wire::PmixFence>();
    ASSERT_EQ(1u, fences.size());
    EXPECT_EQ(1u, fences[0].seq);
    EXPECT_NE(std::string::npos, fences[0].data.find("value-0"));
    EXPECT_NE(std::string::npos, fences[0].data.find("value-1"));
    EXPECT_TRUE(fe.all<wire::Failure>().empty()) << "a failure after finalize";
    fe.hang_up();
    ASSERT_TRUE(fe.run_until([&] { return fe.stopped(); }));
  }
  ASSERT_EQ(server_dirs.size(), 1u);
  EXPECT_FALSE(std::filesystem::exists(server_dirs[0])) << "the server's directory is left";
}

// ferryrun sends PmixStart as soon as the host's PMIx name is known: the server is prepared
// then (its directory, the address its ranks are given), before the HostSpec, but libpmix is
// loaded only when the first rank connects; that spec's ranks are served by it.
TEST_F(DaemonPmix, PmixStartPreparesTheServerAndLibpmixStartsWhenARankConnects) {
  const bool loaded_before = libpmix_loaded();
  auto prepared = [] { return !prepared_dirs().empty(); };
  ASSERT_FALSE(prepared());
  FrontEnd fe(nullptr);
  fe.send(wire::PmixStart{"pmix-test-host"});
  ASSERT_TRUE(fe.run_until(prepared, milliseconds(20000))) << "no server before the HostSpec";
  EXPECT_TRUE(own_server_dirs().empty()) << "libpmix's own folders before any rank connected";
  if (!loaded_before) {
    EXPECT_FALSE(libpmix_loaded()) << "libpmix loaded before any rank connected";
  }
  fe.send(spec("pmix-early", "exchange"));
  size_t answered = 0;
  ASSERT_TRUE(fe.run_until(
      [&] {
        answer_fences(fe, answered);
        return fe.all<wire::Exited>().size() == 2;
      },
      milliseconds(20000)))
      << fe.output(0, StreamId::kStderr);
  EXPECT_EQ("rank 0 size 3 local 0 cpus UNBOUND:UNBOUND peer says value-1\n",
            fe.output(0, StreamId::kStdout));
  for (const auto& e : fe.all<wire::Exited>()) EXPECT_EQ(0, e.exit_code);
  EXPECT_TRUE(libpmix_loaded());
  EXPECT_TRUE(fe.all<wire::Log>().empty()) << fe.all<wire::Log>().front().line;
  fe.hang_up();
  ASSERT_TRUE(fe.run_until([&] { return fe.stopped(); }));
}

// Ranks that never call PMIx_Init (PyTorch, Horovod, a shell) get the server's address, and
// ferryd never loads libpmix for them: no library, no server thread, no memory.
TEST_F(DaemonPmix, RanksThatNeverConnectLeaveLibpmixUnloaded) {
  if (libpmix_loaded()) GTEST_SKIP() << "an earlier test in this process loaded libpmix";
  {
    FrontEnd fe(nullptr);
    auto s = spec("pmix-none", "unused");
    s.argv = {"/bin/sh", "-c", "echo ${PMIX_SERVER_URI41:+uri}"};
    fe.send(s);
    ASSERT_TRUE(fe.run_until([&] { return fe.all<wire::Exited>().size() == 2; }));
    EXPECT_EQ("uri\n", fe.output(0, StreamId::kStdout));
    EXPECT_EQ(1u, prepared_dirs().size());
    EXPECT_TRUE(own_server_dirs().empty()) << "libpmix's own folders";
    fe.hang_up();
    ASSERT_TRUE(fe.run_until([&] { return fe.stopped(); }));
  }
  EXPECT_FALSE(libpmix_loaded());
  EXPECT_TRUE(prepared_dirs().empty()) << "the server's directory is left";
}

// The first ranks connect while ferryd still starts the others (one per loop turn) and
// registers them with libpmix, a call that waits for libpmix's thread; that thread meanwhile
// reads a connected rank's handshake with a blocking read. The handshake's bytes travel on
// ferryd's relay thread, so neither waits for the other: all ranks meet in one fence.
TEST_F(DaemonPmix, ManyRanksConnectingWhileOthersStartAllMeet) {
  constexpr int kRanks = 16;
  FrontEnd fe(nullptr);
  auto s = spec("pmix-many", "exchange");
  s.world_size = kRanks;
  s.node_names = {"pmix-test-host"};
  s.node_of_rank.assign(kRanks, 0);
  s.ranks.clear();
  for (int r = 0; r < kRanks; ++r) s.ranks.push_back({r, {}, {}});
  fe.send(s);
  size_t answered = 0;
  ASSERT_TRUE(fe.run_until(
      [&] {
        answer_fences(fe, answered);
        return fe.all<wire::Exited>().size() == kRanks;
      },
      milliseconds(30000)))
      << fe.all<wire::Exited>().size() << " of " << kRanks << " ranks ended";
  for (const auto& e : fe.all<wire::Exited>())
    EXPECT_EQ(0, e.exit_code) << "rank " << e.rank << ": " << fe.output(e.rank, StreamId::kStderr);
  const std::string five = fe.output(5, StreamId::kStdout);
  EXPECT_TRUE(five.starts_with("rank 5 size 16 local 5 ")) << five;
  EXPECT_TRUE(five.ends_with(" peer says value-4\n")) << five;
}

TEST_F(DaemonPmix, ARemoteRanksDataIsAskedOfTheFrontEndAndItsAnswerDelivered) {
  FrontEnd fe(nullptr);
  auto s = spec("pmix-remote", "remote");
  s.ranks.pop_back();  // rank 0 alone here, ranks 1 and 2 elsewhere
  s.node_of_rank = {0, 1, 1};
  fe.send(s);
  ASSERT_TRUE(
      fe.run_until([&] { return !fe.all<wire::PmixModexRequest>().empty(); }, milliseconds(20000)))
      << fe.output(0, StreamId::kStderr);
  auto asked = fe.all<wire::PmixModexRequest>();
  EXPECT_EQ(2, asked[0].rank) << "the rank whose data is wanted";
  // The other host has no such key: its ferryd answers "not found" (PMIX_ERR_NOT_FOUND), and
  // the rank hears it at once instead of waiting.
  fe.send(wire::PmixModexReply{asked[0].id, -46, {}});
  ASSERT_TRUE(
      fe.run_until([&] { return fe.all<wire::Exited>().size() == 1; }, milliseconds(20000)));
  EXPECT_EQ("rank 0: rank 2's data: not found\n", fe.output(0, StreamId::kStdout));
  EXPECT_EQ(0, fe.all<wire::Exited>()[0].exit_code);
}

TEST_F(DaemonPmix, TheFrontEndsRequestForALocalRanksDataIsAnswered) {
  FrontEnd fe(nullptr);
  fe.send(spec("pmix-serve", "exchange"));
  size_t answered = 0;
  bool asked = false;
  ASSERT_TRUE(fe.run_until(
      [&] {
        // Once the ranks entered the fence their data is committed: another host asks for
        // rank 1's, and the ranks wait in the fence until it has the answer.
        if (!fe.all<wire::PmixFence>().empty() && !asked) {
          fe.send(wire::PmixModexRequest{77, 1});
          asked = true;
        }
        return !fe.all<wire::PmixModexReply>().empty();
      },
      milliseconds(20000)));
  auto replies = fe.all<wire::PmixModexReply>();
  EXPECT_EQ(77u, replies[0].id);
  EXPECT_EQ(0, replies[0].status);
  EXPECT_NE(std::string::npos, replies[0].data.find("value-1")) << "rank 1's own data";
  ASSERT_TRUE(fe.run_until([&] {
    answer_fences(fe, answered);
    return fe.all<wire::Exited>().size() == 2;
  }));
}

// MPI's dynamic processes through the server: a publish and a lookup that waits for it go to
// the front end's name service, and its answers reach the ranks; a connect and a fence over
// ranks 0-2 listed (2 on another host) are one report each for this host, released by the
// front end's answer.
TEST_F(DaemonPmix, NamesConnectAndListedFencesGoThroughTheFrontEnd) {
  FrontEnd fe(nullptr);
  fe.send(spec("pmix-dynamic", "dynamic"));
  size_t names_seen = 0, groups_seen = 0;
  std::vector<wire::PmixGroupOp> groups;
  wire::PmixPublish published;
  std::vector<wire::PmixLookup> waiting;
  ASSERT_TRUE(fe.run_until(
      [&] {
        // Plays the front end: publish answered at once, a lookup once the name is there.
        // (The lookup may come first: rank 1 can be quicker than rank 0.)
        auto pubs = fe.all<wire::PmixPublish>();
        auto looks = fe.all<wire::PmixLookup>();
        for (; names_seen < pubs.size(); ++names_seen) {
          published = pubs[names_seen];
          fe.send(wire::PmixNames{published.id, 0, {}});
        }
        for (const auto& l : looks)
          if (!published.names.empty() && waiting.empty()) {
            waiting.push_back(l);
            fe.send(wire::PmixNames{
                l.id, 0, {{"ferry.svc", published.names[0].value, published.owner}}});
          }
        auto ops = fe.all<wire::PmixGroupOp>();
        for (; groups_seen < ops.size(); ++groups_seen) {
          groups.push_back(ops[groups_seen]);
          fe.send(wire::PmixGroupDone{ops[groups_seen].id, 0, ops[groups_seen].data});
        }
        return fe.all<wire::Exited>().size() == 2;
      },
      milliseconds(20000)))
      << fe.output(0, StreamId::kStderr) << fe.output(1, StreamId::kStderr) << "publishes "
      << fe.all<wire::PmixPublish>().size() << ", lookups " << fe.all<wire::PmixLookup>().size()
      << ", group ops " << groups.size() << ", exits " << fe.all<wire::Exited>().size()
      << "; rank 0 printed: " << fe.output(0, StreamId::kStdout)
      << "; rank 1 printed: " << fe.output(1, StreamId::kStdout);
  ASSERT_EQ(1u, fe.all<wire::PmixPublish>().size());
  EXPECT_EQ(0u, published.owner.rank);
  ASSERT_EQ(1u, published.names.size());
  EXPECT_EQ("ferry.svc", published.names[0].key) << "PMIx's own attributes are not names";
  EXPECT_EQ("port-of-0", published.names[0].value);
  EXPECT_TRUE(published.first_read);
  ASSERT_EQ(1u, waiting.size());
  EXPECT_TRUE(waiting[0].wait);
  EXPECT_EQ(std::vector<std::string>{"ferry.svc"}, waiting[0].keys);
  ASSERT_EQ(2u, groups.size()) << "one connect and one fence for the host, not one per rank";
  EXPECT_EQ(1, groups[0].kind);
  EXPECT_EQ(0, groups[1].kind);
  ASSERT_EQ(3u, groups[0].procs.size());
  EXPECT_EQ(2u, groups[0].procs[2].rank);
  EXPECT_EQ("rank 0: -; connect SUCCESS; fence SUCCESS\n", fe.output(0, StreamId::kStdout));
  EXPECT_EQ("rank 1: port-of-0 from rank 0; connect SUCCESS; fence SUCCESS\n",
            fe.output(1, StreamId::kStdout));
  for (const auto& e : fe.all<wire::Exited>()) EXPECT_EQ(0, e.exit_code);
}

TEST_F(DaemonPmix, AbortBecomesAnAbortFrameWithTheStatus) {
  FrontEnd fe(nullptr);
  fe.send(spec("pmix-abort", "abort"));
  ASSERT_TRUE(fe.run_until([&] { return !fe.all<wire::PmiAbort>().empty(); }, milliseconds(20000)));
  auto aborts = fe.all<wire::PmiAbort>();
  EXPECT_EQ(1, aborts[0].rank);
  EXPECT_EQ(7, aborts[0].exit_code);
  EXPECT_EQ("asked to", aborts[0].message);
  fe.send(wire::Terminate{0});
  ASSERT_TRUE(fe.run_until([&] { return fe.all<wire::Exited>().size() == 2; }));
}

TEST_F(DaemonPmix, LeavingWithoutFinalizeFailsTheRankThoughItExitedZero) {
  FrontEnd fe(nullptr);
  fe.send(spec("pmix-nofin", "no-finalize"));
  ASSERT_TRUE(
      fe.run_until([&] { return fe.all<wire::Exited>().size() == 2; }, milliseconds(20000)));
  auto failures = fe.all<wire::Failure>();
  ASSERT_EQ(2u, failures.size());
  for (const auto& f : failures)
    EXPECT_NE(f.message.find("without calling MPI_Finalize"), std::string::npos) << f.message;
  // Each failure comes before that rank's exit, so the front end counts it.
  EXPECT_LT(fe.index_of<wire::Failure>(), fe.index_of<wire::Exited>());
}

TEST_F(DaemonPmix, RanksGetPmixAndOpenMpisDirectLaunchVariablesUnlessTheUserSetThem) {
  FrontEnd fe(nullptr);
  auto s = spec("pmix-env", "unused");
  s.argv = {"/bin/sh", "-c",
            "echo \"$PMIX_NAMESPACE $PMIX_RANK ${PMIX_SERVER_URI41:+uri} $OMPI_MCA_schizo "
            "$OMPI_MCA_orte_bound_at_launch ${HWLOC_PLUGINS_PATH-unset}\""};
  s.env = {"OMPI_MCA_orte_bound_at_launch=0"};
  fe.send(s);
  ASSERT_TRUE(fe.run_until([&] { return fe.all<wire::Exited>().size() == 2; }));
  // The HWLOC_PLUGINS_PATH that ferryd sets while libpmix starts never reaches the ranks:
  // their hwloc finds its plugins.
  EXPECT_EQ("ferry.pmix-env.0 0 uri ^orte,slurm,flux,jsm 0 unset\n",
            fe.output(0, StreamId::kStdout));
  EXPECT_EQ("ferry.pmix-env.0 1 uri ^orte,slurm,flux,jsm 0 unset\n",
            fe.output(1, StreamId::kStdout));
  // Ranks that never call PMIx_Init are not failed for it.
  EXPECT_TRUE(fe.all<wire::Failure>().empty());
}

// libpmix keeps a copy of the topology ferryd hands it, made by libpmix's own hwloc: a
// topology of this process's hwloc (here the same library) is taken, one whose ABI is another
// hwloc's (its first field, as hwloc_topology_abi_check reads it) is not.
TEST(PmixTopology, OnlyATopologyLibpmixsHwlocCanReadIsHandedOver) {
  hwloc_topology_t topo = nullptr;
  ASSERT_EQ(0, hwloc_topology_init(&topo));
  ASSERT_EQ(0, hwloc_topology_load(topo));
  EXPECT_TRUE(PmixServer::shares_topology(topo));
  hwloc_topology_destroy(topo);
  EXPECT_FALSE(PmixServer::shares_topology(nullptr));
  alignas(64) std::array<unsigned, 256> other{};
  other[0] = 0x10000;  // a topology ABI no hwloc 2 has
  EXPECT_FALSE(PmixServer::shares_topology(other.data()));
}

}  // namespace
}  // namespace ferry
