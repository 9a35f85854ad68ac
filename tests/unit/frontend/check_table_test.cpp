#include "ferry/frontend/check_table.hpp"

#include <gtest/gtest.h>

#include "ferry/daemon/host_check.hpp"

namespace ferry {
namespace {

CheckRow host(const std::string& name, const std::string& torch) {
  CheckRow r;
  r.host = name;
  r.reachable = r.reported = true;
  r.slots = 2;
  r.report.version = "0.1.0";
  r.report.cores = 4;
  r.report.numa_nodes = 1;
  r.report.software = {"python3 3.11.2", "torch " + torch, "NCCL none", "CUDA none",
                       "MPI Open MPI 4.1.4"};
  r.interface = "eth0";
  r.speed = "10000 Mb/s";
  r.preflight = "ok";
  return r;
}

TEST(CheckTable, OneRowPerHostAndTheOddValueMarked) {
  CheckRow down;
  down.host = "n4";
  down.why = "n4:2999: connection refused";
  const std::string t =
      format_check_table({host("n1", "2.0.1"), host("n2", "absent"), host("n3", "2.0.1"), down});
  EXPECT_EQ(t,
            "host  reachable  ferryd  cores  NUMA  accelerators/slots  interface          "
            "preflight  python3  torch     NCCL  CUDA  MPI\n"
            "n1    yes        0.1.0   4      1     0/2                 eth0 (10000 Mb/s)  "
            "ok         3.11.2   2.0.1     none  none  Open MPI 4.1.4\n"
            "n2    yes        0.1.0   4      1     0/2                 eth0 (10000 Mb/s)  "
            "ok         3.11.2   absent *  none  none  Open MPI 4.1.4\n"
            "n3    yes        0.1.0   4      1     0/2                 eth0 (10000 Mb/s)  "
            "ok         3.11.2   2.0.1     none  none  Open MPI 4.1.4\n"
            "n4    no         -       -      -     -                   -                  "
            "-          -        -         -     -     -\n"
            "n4:2999: connection refused\n"
            "*: differs between the hosts\n");
}

TEST(CheckTable, PassesOnlyWhenEveryHostReportedAndNoPreflightFailed) {
  EXPECT_TRUE(check_passed({host("a", "1"), host("b", "1")}));
  CheckRow bad = host("b", "1");
  bad.preflight = "failed";
  EXPECT_FALSE(check_passed({host("a", "1"), bad}));
  CheckRow silent = host("c", "1");
  silent.reported = false;
  EXPECT_FALSE(check_passed({host("a", "1"), silent}));
}

TEST(HostCheck, SoftwareLinesInOrderWithTheAbsentOnesSaid) {
  EXPECT_EQ(software_lines("python3=3.11.2\nMPI=MPICH 4.0.2\nnoise\n"),
            (std::vector<std::string>{"python3 3.11.2", "torch absent", "NCCL absent",
                                      "CUDA absent", "MPI MPICH 4.0.2"}));
}

}  // namespace
}  // namespace ferry
