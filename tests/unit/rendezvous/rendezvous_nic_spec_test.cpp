// --network-interface in NCCL_SOCKET_IFNAME's syntax: prefixes, `=` exact names, `^` exclusions.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ferry/rendezvous/framework_env.hpp"
#include "ferry/rendezvous/interfaces.hpp"
#include "ferry/rendezvous/nic_choice.hpp"

namespace ferry {
namespace {

HostNetwork host(std::string label, std::string reached, std::vector<std::string> lines) {
  lines.insert(lines.begin(), "lo up loopback 127.0.0.1/8 ::1/128");
  auto r = interfaces_from_lines(lines);
  EXPECT_TRUE(r);
  return HostNetwork{std::move(label), std::move(reached), r ? *r : std::vector<NetInterface>{}};
}

std::vector<HostNetwork> two_networks() {
  return {host("a", "10.0.0.1", {"eth0 up 10.0.0.1/24", "ib0 up 192.168.5.1/24"}),
          host("b", "10.0.0.2", {"ens3 up 10.0.0.2/24", "ib0 up 192.168.5.2/24"})};
}

NicChoice choose(const std::string& spec) {
  NicOptions o;
  o.interface = spec;
  return choose_network_interface(two_networks(), o);
}

TEST(NicSpec, Parses) {
  InterfaceSpec s = parse_interface_spec("^=docker0,lo");
  EXPECT_TRUE(s.exclude);
  EXPECT_TRUE(s.exact);
  EXPECT_EQ(s.names, (std::vector<std::string>{"docker0", "lo"}));
  EXPECT_TRUE(s.matches("lo"));
  EXPECT_FALSE(s.matches("docker01"));
  InterfaceSpec p = parse_interface_spec("eth,ib");
  EXPECT_FALSE(p.exclude || p.exact);
  EXPECT_TRUE(p.matches("eth12"));
}

TEST(NicSpec, PrefixesPickTheFirstMatchAndGoToNcclAsWritten) {
  NicChoice c = choose("e");
  ASSERT_TRUE(c.chosen) << c.warning;
  EXPECT_EQ(c.iface, (std::vector<std::string>{"eth0", "ens3"}));
  EXPECT_TRUE(c.warning.empty()) << c.warning;
  EXPECT_EQ(nic_environment(c, 1, {}),
            (std::vector<std::string>{"NCCL_SOCKET_IFNAME=e", "GLOO_SOCKET_IFNAME=ens3",
                                      "HCCL_SOCKET_IFNAME=e", "HOROVOD_GLOO_IFACE=ens3",
                                      "TP_SOCKET_IFNAME=ens3"}));
}

TEST(NicSpec, AnExactNameStaysExactForNccl) {
  NicChoice c = choose("ib0");
  EXPECT_EQ(c.iface, (std::vector<std::string>{"ib0", "ib0"}));
  EXPECT_EQ(nic_environment(c, 0, {}).front(), "NCCL_SOCKET_IFNAME==ib0");
  NicChoice e = choose("=eth");  // exact: no host has an interface named "eth"
  EXPECT_NE(e.warning.find("has no such interface"), std::string::npos) << e.warning;
}

TEST(NicSpec, ExclusionsLeaveTheChoiceToFerryAmongTheRest) {
  NicChoice c = choose("^eth,ens");
  ASSERT_TRUE(c.chosen) << c.warning;
  EXPECT_EQ(c.iface, (std::vector<std::string>{"ib0", "ib0"}));
  EXPECT_EQ(nic_environment(c, 0, {}).front(), "NCCL_SOCKET_IFNAME=^eth,ens");
  EXPECT_EQ(nic_environment(c, 0, {})[1], "GLOO_SOCKET_IFNAME=ib0");
}

}  // namespace
}  // namespace ferry
