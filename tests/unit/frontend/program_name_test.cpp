// The name ferryrun's messages start with ("mpirun: ...", "horovodrun: ..."): the name the
// user called it by, in diagnostics, connection and placement errors, and failure reports.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "ferry/frontend/diagnostics.hpp"
#include "ferry/frontend/job.hpp"
#include "ferry/transport/local_launcher.hpp"
#include "hosts/numbered_hosts.hpp"
#include "job_test_support.hpp"
#include "refusing_launcher.hpp"

namespace ferry {
namespace {

// Diagnostics write to a file so the test can read back exactly what a user sees.
class TempFd {
 public:
  TempFd() {
    char path[] = "/tmp/ferry-diag-XXXXXX";
    fd_ = ::mkstemp(path);
    ::unlink(path);
  }
  ~TempFd() { ::close(fd_); }
  int fd() const { return fd_; }
  std::string text() const {
    std::string s;
    char buf[4096];
    ssize_t n;
    for (off_t at = 0; (n = ::pread(fd_, buf, sizeof buf, at)) > 0; at += n)
      s.append(buf, static_cast<size_t>(n));
    return s;
  }

 private:
  int fd_ = -1;
};

TEST(ProgramName, DiagnosticsStartWithTheProgramName) {
  TempFd f;
  NullSink out;
  Diagnostics diag(&out, f.fd(), true, "mpirun");
  diag.error("fnode9:22: cannot connect: Connection refused");
  diag.warn("w");
  diag.verbose("v");
  EXPECT_EQ(f.text(),
            "mpirun: fnode9:22: cannot connect: Connection refused\n"
            "mpirun: warning: w\n"
            "mpirun: v\n");
  EXPECT_EQ(diag.program(), "mpirun");
}

std::string run_job(JobOptions opts, const std::string& program, int* status) {
  asio::io_context io;
  TempFd f;
  NullSink out;
  Diagnostics diag(&out, f.fd(), false, program);
  LocalLauncher local(io);
  test_support::RefusingLauncher remote(io);
  opts.ferryd_path = std::string(FERRY_BIN_DIR) + "/ferryd";
  opts.stdin_rank = -1;
  opts.wdir = "/tmp";
  opts.kill_grace_s = 1;
  Job job(io, std::move(opts), Launchers{local, remote}, out, diag);
  *status = job.run();
  return f.text();
}

TEST(ProgramName, ConnectionErrorsAndPlacementErrorsNameTheProgram) {
  JobOptions opts;
  opts.hosts = numbered_hosts({1});  // node1 is not this machine: the refusing launcher
  opts.np = 1;
  opts.command = {"true"};
  int status = 0;
  std::string err = run_job(opts, "horovodrun", &status);
  EXPECT_EQ(status, 1);
  EXPECT_EQ(err,
            "horovodrun: node1:22: cannot connect: Connection refused\n"
            "horovodrun: the job did not start (1 of 1 hosts failed)\n");

  // A host from a file: its failure line says which line declared it.
  opts.hosts[0].origin = "hosts.txt:3";
  err = run_job(opts, "ferryrun", &status);
  EXPECT_EQ(err,
            "ferryrun: node1:22: cannot connect: Connection refused (hosts.txt:3)\n"
            "ferryrun: the job did not start (1 of 1 hosts failed)\n");

  opts.np = 2;
  err = run_job(opts, "mpiexec", &status);
  EXPECT_EQ(status, 2);
  EXPECT_EQ(err.rfind("mpiexec: -np 2 asks for more ranks", 0), 0u) << err;
}

TEST(ProgramName, FailureReportNamesTheProgram) {
  JobOptions opts;
  HostEntry h;
  h.name = "localhost";
  h.slots = 2;
  opts.hosts = {h};
  opts.np = 2;
  opts.command = {"sh", "-c", "if [ $RANK = 1 ]; then exit 5; fi; sleep 30"};
  int status = 0;
  std::string err = run_job(opts, "mpirun", &status);
  EXPECT_EQ(status, 5);
  EXPECT_NE(err.find("\nmpirun: rank 1 on host localhost (local rank 1"), std::string::npos) << err;
  EXPECT_NE(err.find("exited with status 5.\n"), std::string::npos) << err;
  EXPECT_EQ(err.find("ferryrun"), std::string::npos) << err;
}

}  // namespace
}  // namespace ferry
