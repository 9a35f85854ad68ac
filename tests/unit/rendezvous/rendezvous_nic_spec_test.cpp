// --network-interface in NCCL_SOCKET_IFNAME's syntax: prefixes, `=` exact names, `^` exclusions.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
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

// Open MPI's btl_tcp_if_include / _exclude take subnets as well as names.
TEST(NicSpec, SubnetsNameTheInterfaceHoldingAnAddressInThem) {
  NicChoice ib = choose("192.168.5.0/24");
  ASSERT_TRUE(ib.chosen);
  EXPECT_TRUE(ib.warning.empty()) << ib.warning;
  EXPECT_EQ(ib.iface, (std::vector<std::string>{"ib0", "ib0"}));
  EXPECT_EQ(ib.address, (std::vector<std::string>{"192.168.5.1", "192.168.5.2"}));
  EXPECT_EQ(nic_environment(ib, 0, {}).front(), "NCCL_SOCKET_IFNAME==ib0");
  // Different names on each host: NCCL gets each host's own.
  NicChoice eth = choose("10.0.0.0/8");
  EXPECT_EQ(eth.iface, (std::vector<std::string>{"eth0", "ens3"}));
  EXPECT_EQ(nic_environment(eth, 1, {}).front(), "NCCL_SOCKET_IFNAME==ens3");
  // A list with a prefix and a subnet: the prefix where it matches, the subnet elsewhere; NCCL
  // could not read the list, so it gets the chosen names.
  NicChoice mixed = choose("eth,10.0.0.0/24");
  EXPECT_EQ(mixed.iface, (std::vector<std::string>{"eth0", "ens3"}));
  EXPECT_EQ(nic_environment(mixed, 0, {}).front(), "NCCL_SOCKET_IFNAME==eth0");
  NicChoice none = choose("172.16.0.0/12");
  EXPECT_NE(none.warning.find("--network-interface 172.16.0.0/12: host a has no such interface"),
            std::string::npos)
      << none.warning;
}

TEST(NicSpec, SubnetExclusionsLeaveTheChoiceToFerryAndNcclGetsTheNames) {
  NicChoice c = choose("^10.0.0.0/24");
  ASSERT_TRUE(c.chosen) << c.warning;
  EXPECT_EQ(c.iface, (std::vector<std::string>{"ib0", "ib0"}));
  EXPECT_EQ(nic_environment(c, 0, {}).front(), "NCCL_SOCKET_IFNAME==ib0");
  NicOptions o;
  o.exclude = {"10.0.0.0/24"};  // mpirun --mca btl_tcp_if_exclude 10.0.0.0/24
  NicChoice e = choose_network_interface(two_networks(), o);
  ASSERT_TRUE(e.chosen) << e.warning;
  EXPECT_EQ(e.iface, (std::vector<std::string>{"ib0", "ib0"}));
}

TEST(NicSpec, SubnetSyntax) {
  auto v4 = parse_subnet("10.1.0.0/16");
  ASSERT_TRUE(v4.has_value());
  EXPECT_FALSE(v4->ipv6);
  EXPECT_EQ(v4->prefix, 16);
  auto v6 = parse_subnet("fd00::/64");
  ASSERT_TRUE(v6.has_value());
  EXPECT_TRUE(v6->ipv6);
  for (const char* bad : {"eth0", "10.0.0.0/33", "10.0.0.0/", "x/8", "10.0.0.0/-1", "fd00::/129"})
    EXPECT_FALSE(parse_subnet(bad).has_value()) << bad;
}

// Reached on the management network (eth0, 1 Gb/s); both also have a faster common one.
TEST(NicSpeed, TheFasterCommonNetworkWinsAndVerboseSaysSo) {
  std::vector<HostNetwork> hosts = {
      host("a", "10.0.0.1", {"eth0 up speed=1000 10.0.0.1/24", "eth1 up speed=25000 10.9.0.1/24"}),
      host("b", "10.0.0.2", {"eth0 up speed=1000 10.0.0.2/24", "eth1 up speed=25000 10.9.0.2/24"}),
  };
  NicChoice c = choose_network_interface(hosts, {});
  ASSERT_TRUE(c.chosen) << c.warning;
  EXPECT_EQ(c.iface, (std::vector<std::string>{"eth1", "eth1"}));
  EXPECT_EQ(master_address(c, "x"), "10.9.0.1");
  bool said = false;
  for (const auto& line : c.explanation)
    said = said || line ==
                       "network: preferred 10.9.0.0/24 (25000 Mb/s) over 10.0.0.0/24 "
                       "(1000 Mb/s), the network ferryrun reached the hosts on";
  EXPECT_TRUE(said) << c.explanation.back();
}

TEST(NicSpeed, InfinibandFirstAndUnknownSpeedsKeepTheReachedNetwork) {
  std::vector<HostNetwork> ib = {
      host("a", "10.0.0.1", {"eth0 up speed=100000 10.0.0.1/24", "ib0 up infiniband 10.8.0.1/16"}),
      host("b", "10.0.0.2", {"eth0 up speed=100000 10.0.0.2/24", "ib0 up infiniband 10.8.0.2/16"}),
  };
  EXPECT_EQ(choose_network_interface(ib, {}).iface, (std::vector<std::string>{"ib0", "ib0"}));
  std::vector<HostNetwork> unknown = {
      host("a", "10.0.0.1", {"eth0 up 10.0.0.1/24", "eth1 up speed=25000 10.9.0.1/24"}),
      host("b", "10.0.0.2", {"eth0 up 10.0.0.2/24", "eth1 up 10.9.0.2/24"}),
  };
  EXPECT_EQ(choose_network_interface(unknown, {}).iface,
            (std::vector<std::string>{"eth0", "eth0"}));
}

TEST(NicSpeed, SpeedAndTypeTravelInTheLines) {
  std::vector<NetInterface> v(1);
  v[0].name = "ib0";
  v[0].up = true;
  v[0].infiniband = true;
  v[0].speed_mbps = 100000;
  v[0].addresses = {{false, "10.8.0.1", 16}};
  auto lines = interfaces_to_lines(v);
  EXPECT_EQ(lines, (std::vector<std::string>{"ib0 up infiniband speed=100000 10.8.0.1/16"}));
  auto back = interfaces_from_lines(lines);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, v);
  EXPECT_FALSE(interfaces_from_lines({"eth0 up speed=fast 10.0.0.1/24"}));
}

// The loopback's speed and type as a sysfs tree (`sysfs_net`) says them: numbers read, and
// anything else (a "-1", a read that fails, as a virtual interface's speed does, a missing
// file, text) read as unknown.
TEST(SystemInterfaces, SpeedAndTypeAreReadFromSysfs) {
  namespace fs = std::filesystem;
  const std::string sysfs = ::testing::TempDir() + "ferry-sysfs-net";
  auto lo_with = [&](const std::string& speed, const std::string& type) {
    fs::remove_all(sysfs);
    fs::create_directories(sysfs + "/lo");
    if (speed == "(unreadable)")
      fs::create_directories(sysfs + "/lo/speed");  // read(2) fails: EISDIR
    else if (!speed.empty())
      std::ofstream(sysfs + "/lo/speed") << speed;
    if (!type.empty()) std::ofstream(sysfs + "/lo/type") << type;
    auto ifs = SystemInterfaceReader(sysfs).read();
    EXPECT_TRUE(ifs.ok());
    for (const NetInterface& i : ifs ? *ifs : std::vector<NetInterface>{})
      if (i.name == "lo") return std::pair(i.speed_mbps, i.infiniband);
    ADD_FAILURE() << "no lo";
    return std::pair(-1, false);
  };
  EXPECT_EQ(lo_with("25000\n", "32\n"), std::pair(25000, true));
  EXPECT_EQ(lo_with("-1\n", "772\n"), std::pair(0, false));
  EXPECT_EQ(lo_with("(unreadable)", ""), std::pair(0, false));
  EXPECT_EQ(lo_with("fast\n", "thirty-two\n"), std::pair(0, false));
  EXPECT_EQ(lo_with("", "32"), std::pair(0, true));
  fs::remove_all(sysfs);
}

}  // namespace
}  // namespace ferry
