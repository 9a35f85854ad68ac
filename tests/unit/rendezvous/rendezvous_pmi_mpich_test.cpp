// Real-peer test: MPICH ranks (compiled here with mpicc.mpich) talk PMI-1 to PmiHost
// engines over socketpairs, two simulated hosts glued by a PmiJob, as ferryd and the front
// end will. Skipped where MPICH is not installed.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "ferry/rendezvous/framework_env.hpp"
#include "ferry/rendezvous/pmi_host.hpp"
#include "ferry/rendezvous/pmi_job.hpp"

extern char** environ;

namespace ferry {
namespace {

const char* kProgram = R"(#include <mpi.h>
#include <stdio.h>
#include <string.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc > 1 && strcmp(argv[1], "abort") == 0 && rank == size - 1)
    MPI_Abort(MPI_COMM_WORLD, 7);
  int sum = 0;
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  int got = -1, next = (rank + 1) % size, prev = (rank + size - 1) % size;
  MPI_Sendrecv(&rank, 1, MPI_INT, next, 0, &got, 1, MPI_INT, prev, 0, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  int ok = sum == size * (size - 1) / 2 && got == prev;
  printf("mpich rank %d/%d sum=%d from_prev=%d %s\n", rank, size, sum, got, ok ? "ok" : "BAD");
  MPI_Finalize();
  return ok ? 0 : 1;
}
)";

class MpichPmi : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (::access("/usr/bin/mpicc.mpich", X_OK) != 0) return;
    char dir[] = "/tmp/ferry-pmi-XXXXXX";
    if (!::mkdtemp(dir)) {
      setup_error_ = "mkdtemp failed";
      return;
    }
    dir_ = dir;
    std::string src = std::string(dir) + "/ring.c";
    std::ofstream(src) << kProgram;
    binary_ = std::string(dir) + "/ring";
    std::string cmd = "mpicc.mpich -o " + binary_ + " " + src;
    if (std::system(cmd.c_str()) != 0) {
      // MPICH is installed, so this is a broken install or test, not a machine without it.
      setup_error_ = "'" + cmd + "' failed (its output is above)";
      binary_.clear();
    }
  }
  static void TearDownTestSuite() {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  void SetUp() override {
    if (!setup_error_.empty()) FAIL() << setup_error_;
    if (binary_.empty()) GTEST_SKIP() << "needs /usr/bin/mpicc.mpich (the mpich package)";
  }

  struct Outcome {
    std::map<int, int> status;  // rank -> wait status
    std::vector<std::string> failures, aborts;
    uint32_t barriers = 0;
  };

  // Runs `per_host` ranks on each of `hosts` simulated hosts.
  Outcome run(int hosts, int per_host, const std::string& arg) {
    const int world = hosts * per_host;
    std::vector<int> node_of_rank;
    for (int r = 0; r < world; ++r) node_of_rank.push_back(r / per_host);
    Outcome out;
    std::map<int, int> fd_of;  // rank -> our end
    std::vector<std::unique_ptr<PmiHost>> engines;
    PmiJob job(hosts, [&](uint32_t e, const std::vector<PmiKv>& kv) {
      for (auto& h : engines) EXPECT_TRUE(h->barrier_complete(e, kv));
    });
    for (int h = 0; h < hosts; ++h) {
      PmiHostConfig c;
      c.kvsname = "ferrytest";
      c.world_size = world;
      c.process_mapping = pmi_process_mapping(node_of_rank);
      for (int l = 0; l < per_host; ++l) c.ranks.push_back(h * per_host + l);
      PmiHostEvents ev;
      ev.reply = [&](int rank, std::string bytes) {
        ASSERT_EQ(::write(fd_of[rank], bytes.data(), bytes.size()),
                  static_cast<ssize_t>(bytes.size()));
      };
      ev.barrier_ready = [&, h](uint32_t e, std::vector<PmiKv> puts) {
        EXPECT_TRUE(job.host_barrier(h, e, std::move(puts)));
      };
      ev.abort = [&](int rank, int code, std::string) {
        out.aborts.push_back(std::to_string(rank) + ":" + std::to_string(code));
      };
      ev.failed = [&](int rank, std::string why) {
        out.failures.push_back(std::to_string(rank) + ": " + why);
      };
      engines.push_back(std::make_unique<PmiHost>(c, ev));
    }
    std::map<int, pid_t> pid_of;
    for (int r = 0; r < world; ++r) {
      int sv[2];
      EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
      std::vector<std::string> env;
      for (char** e = environ; *e; ++e)
        if (!std::string_view(*e).starts_with("PMI_")) env.emplace_back(*e);
      for (auto& kv : pmi_environment(sv[1], r, world, "host" + std::to_string(r / per_host),
                                      r % per_host, per_host))
        env.push_back(kv);
      std::vector<char*> envp,
          argv{const_cast<char*>(binary_.c_str()), const_cast<char*>(arg.c_str()), nullptr};
      for (auto& s : env) envp.push_back(s.data());
      envp.push_back(nullptr);
      pid_t pid = ::fork();
      if (pid == 0) {
        ::fcntl(sv[1], F_SETFD, 0);  // the rank's end survives exec
        ::execve(argv[0], argv.data(), envp.data());
        ::_exit(127);
      }
      ::close(sv[1]);
      fd_of[r] = sv[0];
      pid_of[r] = pid;
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    std::map<int, bool> open;
    for (auto& [r, fd] : fd_of) open[r] = true;
    while (std::chrono::steady_clock::now() < deadline) {
      std::vector<pollfd> pfds;
      std::vector<int> ranks;
      for (auto& [r, is_open] : open)
        if (is_open) {
          pfds.push_back({fd_of[r], POLLIN, 0});
          ranks.push_back(r);
        }
      if (pfds.empty() || !out.aborts.empty()) break;
      if (::poll(pfds.data(), pfds.size(), 200) < 0) break;
      for (std::size_t i = 0; i < pfds.size(); ++i) {
        if (!(pfds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        char buf[4096];
        ssize_t n = ::read(pfds[i].fd, buf, sizeof buf);
        PmiHost& eng = *engines[ranks[i] / per_host];
        if (n <= 0) {
          open[ranks[i]] = false;
          eng.closed(ranks[i]);
        } else {
          eng.feed(ranks[i], std::string_view(buf, static_cast<std::size_t>(n)));
        }
      }
    }
    for (auto& [r, pid] : pid_of) {
      if (!out.aborts.empty()) ::kill(pid, SIGKILL);
      int st = 0;
      ::waitpid(pid, &st, 0);
      out.status[r] = st;
      ::close(fd_of[r]);
    }
    out.barriers = engines[0]->barriers_done();
    return out;
  }

  static std::string binary_;
  static inline std::string setup_error_;
  static inline std::string dir_;  // the ring program's folder
};
std::string MpichPmi::binary_;

TEST_F(MpichPmi, TwoHostsOfTwoRanksAllreduceAndRing) {
  auto out = run(2, 2, "");
  EXPECT_TRUE(out.failures.empty()) << out.failures.front();
  EXPECT_TRUE(out.aborts.empty());
  for (auto& [r, st] : out.status) {
    EXPECT_TRUE(WIFEXITED(st)) << "rank " << r;
    EXPECT_EQ(WEXITSTATUS(st), 0) << "rank " << r;
  }
  EXPECT_GE(out.barriers, 2u);  // MPICH 4.0 init does several
}

TEST_F(MpichPmi, ThreeHostsOfOneRank) {
  auto out = run(3, 1, "");
  EXPECT_TRUE(out.failures.empty());
  for (auto& [r, st] : out.status) EXPECT_EQ(st, 0) << "rank " << r;
}

TEST_F(MpichPmi, MpiAbortReachesTheEngineWithItsCode) {
  auto out = run(1, 2, "abort");
  ASSERT_EQ(out.aborts.size(), 1u);
  EXPECT_EQ(out.aborts[0], "1:7");
}

}  // namespace
}  // namespace ferry
