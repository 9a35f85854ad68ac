#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ferry/rendezvous/framework_env.hpp"
#include "ferry/rendezvous/interfaces.hpp"
#include "ferry/rendezvous/nic_choice.hpp"

namespace ferry {
namespace {

// "eth0 up 10.0.0.2/24" style shorthand through the wire format itself.
std::vector<NetInterface> ifs(std::vector<std::string> lines) {
  auto r = interfaces_from_lines(lines);
  EXPECT_TRUE(r) << (r ? "" : r.error().message);
  return r ? *r : std::vector<NetInterface>{};
}

HostNetwork host(std::string label, std::string reached, std::vector<std::string> lines) {
  lines.insert(lines.begin(), "lo up loopback 127.0.0.1/8 ::1/128");
  return HostNetwork{std::move(label), std::move(reached), ifs(std::move(lines))};
}

TEST(Interfaces, LinesRoundTrip) {
  std::vector<NetInterface> v = {
      {"lo", true, true, {{false, "127.0.0.1", 8}, {true, "::1", 128}}},
      {"eth0", true, false, {{false, "10.0.0.2", 24}, {true, "fd00::2", 64}}},
      {"eth1", false, false, {}},
  };
  auto lines = interfaces_to_lines(v);
  EXPECT_EQ(lines[1], "eth0 up 10.0.0.2/24 fd00::2/64");
  EXPECT_EQ(lines[2], "eth1 down");
  auto back = interfaces_from_lines(lines);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, v);
  for (const char* bad : {"eth0", "eth0 sideways", "eth0 up 10.0.0.1", "eth0 up 10.0.0.1/33",
                          "eth0 up 10.0.0.300/24", "eth0 up fd00::1/129", "eth0 up a/b"})
    EXPECT_FALSE(interfaces_from_lines({bad})) << bad;
}

TEST(Interfaces, SubnetArithmetic) {
  IfAddress a{false, "10.0.1.5", 24}, b{false, "10.0.1.200", 24}, c{false, "10.0.2.5", 24};
  EXPECT_TRUE(same_subnet(a, b, 24));
  EXPECT_FALSE(same_subnet(a, c, 24));
  EXPECT_TRUE(same_subnet(a, c, 16));
  EXPECT_TRUE(same_subnet(a, c, 0));
  IfAddress d{true, "fd00::1", 64}, e{true, "fd00::ffff", 64}, f{true, "fd01::1", 64};
  EXPECT_TRUE(same_subnet(d, e, 64));
  EXPECT_FALSE(same_subnet(d, f, 64));
  EXPECT_FALSE(same_subnet(a, d, 0));  // families never mix
}

TEST(Interfaces, SystemReaderSeesLoopback) {
  SystemInterfaceReader r;
  auto v = r.read();
  ASSERT_TRUE(v) << v.error().message;
  bool lo = false;
  for (const auto& i : *v)
    for (const auto& a : i.addresses)
      if (i.loopback && a.address == "127.0.0.1" && a.prefix == 8) lo = true;
  EXPECT_TRUE(lo);
  for (const auto& i : *v)
    for (const auto& a : i.addresses) EXPECT_FALSE(a.address.starts_with("fe80:")) << a.address;
}

TEST(NicChoice, PicksTheSharedSubnetAndSkipsVirtualInterfaces) {
  std::vector<HostNetwork> hosts = {
      host("a", "10.0.0.1",
           {"docker0 up 172.17.0.1/16", "eth0 up 10.0.0.1/24", "veth12 up",
            "ib0 up 192.168.5.1/24"}),
      host("b", "10.0.0.2",
           {"docker0 up 172.17.0.1/16", "virbr0 up 192.168.122.1/24", "ens3 up 10.0.0.2/24",
            "ib0 up 192.168.5.2/24"}),
  };
  auto c = choose_network_interface(hosts, {});
  ASSERT_TRUE(c.chosen) << c.warning;
  EXPECT_EQ(c.iface, (std::vector<std::string>{"eth0", "ens3"}));
  EXPECT_EQ(c.address, (std::vector<std::string>{"10.0.0.1", "10.0.0.2"}));
  EXPECT_TRUE(c.warning.empty());
  EXPECT_EQ(master_address(c, "x"), "10.0.0.1");
  EXPECT_NE(c.explanation.back().find("10.0.0.0/24"), std::string::npos) << c.explanation.back();
  EXPECT_EQ(nic_environment(c, 1, {}),
            (std::vector<std::string>{"NCCL_SOCKET_IFNAME==ens3", "GLOO_SOCKET_IFNAME=ens3",
                                      "HCCL_SOCKET_IFNAME==ens3", "HOROVOD_GLOO_IFACE=ens3",
                                      "TP_SOCKET_IFNAME=ens3"}));
}

TEST(NicChoice, ExcludedInterfacesAreNeverChosen) {
  // Both hosts share two subnets: eth0 is chosen, unless excluded (mpirun's if_exclude).
  std::vector<HostNetwork> hosts = {
      host("a", "10.0.0.1", {"eth0 up 10.0.0.1/24", "ib0 up 192.168.5.1/24"}),
      host("b", "10.0.0.2", {"eth0 up 10.0.0.2/24", "ib0 up 192.168.5.2/24"}),
  };
  ASSERT_TRUE(choose_network_interface(hosts, {}).chosen);
  EXPECT_EQ(choose_network_interface(hosts, {}).iface, (std::vector<std::string>{"eth0", "eth0"}));
  NicOptions o;
  o.exclude = {"eth0"};
  auto c = choose_network_interface(hosts, o);
  ASSERT_TRUE(c.chosen) << c.warning;
  EXPECT_EQ(c.iface, (std::vector<std::string>{"ib0", "ib0"}));
  EXPECT_EQ(c.address, (std::vector<std::string>{"192.168.5.1", "192.168.5.2"}));
}

TEST(NicChoice, PrefersSameNamesWhenNoHostWasReachedOnIt) {
  // Front end on a third machine reached both through a management network it is not
  // part of (a jump host); both data networks are shared: ib0 (same name) wins over IPv6.
  std::vector<HostNetwork> hosts = {
      host("a", "", {"eth0 up fd00::1/64", "ib0 up 192.168.5.1/24"}),
      host("b", "203.0.113.9", {"eth0 up fd00::2/64", "ib0 up 192.168.5.2/24"}),
  };
  auto c = choose_network_interface(hosts, {});
  ASSERT_TRUE(c.chosen);
  EXPECT_EQ(c.iface, (std::vector<std::string>{"ib0", "ib0"}));
}

TEST(NicChoice, LoopbackWhenEveryHostIsThisMachineOrThereIsOne) {
  auto local = choose_network_interface({host("localhost", "", {"eth0 up 10.0.0.1/24"}),
                                         host("127.0.0.1", "", {"eth0 up 10.0.0.1/24"})},
                                        {});
  ASSERT_TRUE(local.chosen);
  EXPECT_EQ(local.iface, (std::vector<std::string>{"lo", "lo"}));
  EXPECT_EQ(master_address(local, "x"), "127.0.0.1");
  // One host, even a port-mapped container: its ranks only talk to each other.
  auto one = choose_network_interface({host("c1", "10.9.9.9", {"eth0 up 172.17.0.2/16"})}, {});
  EXPECT_EQ(one.iface, (std::vector<std::string>{"lo"}));
  EXPECT_TRUE(one.warning.empty());
  // ssh to this machine twice: the same addresses.
  auto same = choose_network_interface({host("a", "127.0.0.1", {"eth0 up 10.0.0.1/24"}),
                                        host("b", "10.0.0.1", {"eth0 up 10.0.0.1/24"})},
                                       {});
  EXPECT_EQ(same.iface, (std::vector<std::string>{"lo", "lo"}));
}

TEST(NicChoice, BridgeContainersOnDifferentMachinesGetAWarning) {
  // Reached through port mappings on two machines; both containers sit on the default
  // Docker bridge of their own machine.
  std::vector<HostNetwork> hosts = {
      host("node1:2222", "10.0.0.5", {"eth0 up 172.17.0.2/16"}),
      host("node2:2222", "10.0.0.6", {"eth0 up 172.17.0.3/16"}),
  };
  auto c = choose_network_interface(hosts, {});
  EXPECT_FALSE(c.chosen);
  EXPECT_NE(c.warning.find("no network interface connects all hosts"), std::string::npos);
  EXPECT_NE(c.warning.find("port-mapped container"), std::string::npos);
  EXPECT_NE(c.warning.find("--network=host"), std::string::npos);
  EXPECT_NE(c.warning.find("--network-interface"), std::string::npos);
  EXPECT_NE(c.warning.find("Docker's default bridge"), std::string::npos);
  EXPECT_TRUE(nic_environment(c, 0, {}).empty());
  EXPECT_EQ(master_address(c, "10.0.0.5"), "10.0.0.5");
  // The same address on both sides is never one network either.
  hosts[1].interfaces = ifs({"eth0 up 172.18.0.2/16"});
  hosts[0].interfaces = ifs({"eth0 up 172.18.0.2/16"});
  EXPECT_FALSE(choose_network_interface(hosts, {}).chosen);
}

TEST(NicChoice, ContainersSharingAnOverlayNetworkAreFine) {
  std::vector<HostNetwork> hosts = {
      host("node1:2222", "10.0.0.5", {"eth0 up 172.17.0.2/16", "eth1 up 10.10.0.2/24"}),
      host("node2:2222", "10.0.0.6", {"eth0 up 172.17.0.3/16", "eth1 up 10.10.0.3/24"}),
  };
  auto c = choose_network_interface(hosts, {});
  ASSERT_TRUE(c.chosen) << c.warning;
  EXPECT_EQ(c.iface, (std::vector<std::string>{"eth1", "eth1"}));
}

TEST(NicChoice, RoutedHostsKeepTheInterfaceTheyWereReachedOn) {
  std::vector<HostNetwork> hosts = {
      host("a", "10.1.0.1", {"eth0 up 10.1.0.1/24"}),
      host("b", "10.2.0.1", {"eth0 up 10.2.0.1/24", "docker0 up 172.17.0.1/16"}),
  };
  auto c = choose_network_interface(hosts, {});
  ASSERT_TRUE(c.chosen);
  EXPECT_EQ(c.iface, (std::vector<std::string>{"eth0", "eth0"}));
  EXPECT_NE(c.explanation.back().find("routing"), std::string::npos);
}

TEST(NicChoice, DownInterfacesAreIgnored) {
  std::vector<HostNetwork> hosts = {
      host("a", "10.0.0.1", {"eth0 up 10.0.0.1/24", "eth1 down 10.5.0.1/24"}),
      host("b", "10.0.0.2", {"eth0 up 10.0.0.2/24", "eth1 down 10.5.0.2/24"}),
  };
  auto c = choose_network_interface(hosts, {});
  EXPECT_EQ(c.iface, (std::vector<std::string>{"eth0", "eth0"}));
}

TEST(NicChoice, UserInterfaceOverrides) {
  std::vector<HostNetwork> hosts = {
      host("a", "10.0.0.1", {"eth0 up 10.0.0.1/24", "ib0 up 192.168.5.1/24"}),
      host("b", "10.0.0.2", {"eth0 up 10.0.0.2/24", "ib1 up 192.168.5.2/24"}),
  };
  auto c = choose_network_interface(hosts, {"ib0,ib1"});
  ASSERT_TRUE(c.chosen);
  EXPECT_EQ(c.iface, (std::vector<std::string>{"ib0", "ib1"}));
  EXPECT_EQ(c.address, (std::vector<std::string>{"192.168.5.1", "192.168.5.2"}));
  EXPECT_TRUE(c.warning.empty());
  auto missing = choose_network_interface(hosts, {"ib0"});
  EXPECT_TRUE(missing.chosen);  // the user asked for it: set it anyway, but say so
  EXPECT_NE(missing.warning.find("host b has no such interface"), std::string::npos);
}

TEST(FrameworkEnv, UserSettingsWin) {
  NicChoice c;
  c.chosen = true;
  c.iface = {"eth0"};
  c.address = {"10.0.0.1"};
  auto env = nic_environment(c, 0, {"NCCL_SOCKET_IFNAME=^docker", "GLOO_SOCKET_IFNAMEX=1"});
  EXPECT_EQ(env, (std::vector<std::string>{"GLOO_SOCKET_IFNAME=eth0", "HCCL_SOCKET_IFNAME==eth0",
                                           "HOROVOD_GLOO_IFACE=eth0", "TP_SOCKET_IFNAME=eth0"}));
  EXPECT_TRUE(nic_environment(c, 1, {}).empty());
}

TEST(FrameworkEnv, HorovodPmiAndTorchHelpers) {
  EXPECT_EQ(horovod_environment(40123, "s3cr3t", {"HOROVOD_CONTROLLER=mpi"}),
            (std::vector<std::string>{"HOROVOD_GLOO_RENDEZVOUS_ADDR=127.0.0.1",
                                      "HOROVOD_GLOO_RENDEZVOUS_PORT=40123",
                                      "HOROVOD_CPU_OPERATIONS=gloo", "FERRY_JOB_SECRET=s3cr3t"}));
  EXPECT_EQ(pmi_environment(5, 3, 8, "b", 1, 4),
            (std::vector<std::string>{"PMI_FD=5", "PMI_RANK=3", "PMI_SIZE=8", "PMI_HOSTNAME=b",
                                      "MPI_LOCALRANKID=1", "MPI_LOCALNRANKS=4"}));
  EXPECT_EQ(with_local_rank_arg({"python3", "train.py", "--epochs", "3"}, 2),
            (std::vector<std::string>{"python3", "train.py", "--epochs", "3", "--local-rank=2"}));
  EXPECT_EQ(with_local_rank_arg({"x"}, 0, LocalRankArgStyle::kUnderscore).back(), "--local_rank=0");
}

}  // namespace
}  // namespace ferry
