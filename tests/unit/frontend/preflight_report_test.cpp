#include "ferry/frontend/preflight_report.hpp"

#include <gtest/gtest.h>

namespace ferry {
namespace {

PreflightFailure dropped() {
  PreflightFailure f;
  f.host = "fnode3";
  f.host_interface = "eth0";
  f.target = "fnode1";
  f.target_interface = "eth0";
  f.address = "10.231.0.11";
  f.port = 29500;
  f.error = "no answer within 3.0 s";
  f.reason = "ETIMEDOUT";
  return f;
}

TEST(PreflightReport, OneLineNamesBothHostsTheEndpointTheInterfacesAndTheCause) {
  EXPECT_EQ(preflight_failure_line(dropped()),
            "preflight: fnode3 (leaving by eth0) cannot reach fnode1 at 10.231.0.11:29500 "
            "(MASTER_ADDR on fnode1's eth0): no answer within 3.0 s; likely cause: packets are "
            "dropped on the way: a firewall, or no route back (--no-preflight skips this check)");
}

TEST(PreflightReport, CausesFromTheAddressComeBeforeTheErrno) {
  PreflightFailure f = dropped();
  f.target_interface = "docker0";
  EXPECT_NE(preflight_cause(f).find("virtual interface (docker0)"), std::string::npos);
  f.target_interface = "eth0";
  f.address = "169.254.3.4";
  EXPECT_NE(preflight_cause(f).find("link-local"), std::string::npos);
  f.address = "127.0.1.1";
  EXPECT_NE(preflight_cause(f).find("loopback"), std::string::npos);
  f.address = "172.17.0.2";
  EXPECT_NE(preflight_cause(f).find("Docker bridge"), std::string::npos);
  f.address = "10.0.0.1";
  f.reason = "ECONNREFUSED";
  EXPECT_NE(preflight_cause(f).find("firewall rejecting"), std::string::npos);
  f.reason = "EWHATEVER";
  EXPECT_EQ(preflight_cause(f), "");
}

TEST(PreflightReport, ListeningFailureOfRankZerosHost) {
  PreflightFailure f;
  f.listening = true;
  f.host = f.target = "w1";
  f.address = "192.0.2.7";
  f.port = 40000;
  f.error = "cannot listen on 192.0.2.7:40000: Cannot assign requested address";
  f.reason = "EADDRNOTAVAIL";
  const std::string line = preflight_failure_line(f);
  EXPECT_EQ(line.find("preflight: w1 cannot listen on 192.0.2.7:40000 (MASTER_ADDR)"), 0u) << line;
  EXPECT_NE(line.find("likely cause: the address is not on that host"), std::string::npos) << line;
}

TEST(PreflightReport, PeerRoundNamesTheOtherHostsOwnAddressWhereItsRanksListen) {
  PreflightFailure f = dropped();
  f.peer = true;
  f.host = "fnode1";
  f.host_interface = "fast0";
  f.target = "fnode2";
  f.target_interface = "fast0";
  f.address = "10.241.0.12";
  f.port = 41234;
  EXPECT_EQ(preflight_failure_line(f),
            "preflight: fnode1 (leaving by fast0) cannot reach fnode2 at 10.241.0.12:41234 "
            "(fnode2's own address on fast0, where its ranks listen for their peers: gloo, NCCL, "
            "MPI): no answer within 3.0 s; likely cause: packets are dropped on the way: a "
            "firewall, or no route back (--no-preflight skips this check)");
}

TEST(PreflightReport, PeerRoundListeningFailureNamesTheHostsOwnAddress) {
  PreflightFailure f;
  f.peer = true;
  f.listening = true;
  f.host = f.target = "w2";
  f.target_interface = "eth1";
  f.address = "192.0.2.8";
  f.error = "cannot listen on 192.0.2.8:0: Cannot assign requested address";
  f.reason = "EADDRNOTAVAIL";
  const std::string line = preflight_failure_line(f);
  EXPECT_EQ(line.find("preflight: w2 cannot listen on its own address 192.0.2.8 (eth1), where its "
                      "ranks listen for their peers: gloo, NCCL, MPI: cannot listen"),
            0u)
      << line;
  EXPECT_EQ(line.find("MASTER_ADDR"), std::string::npos) << line;
}

}  // namespace
}  // namespace ferry
