// The host option (`-H`, `--host`, horovodrun's `--hosts`): the forms mpirun, horovodrun
// and hydra users type.

#include <gtest/gtest.h>

#include "ferry/hosts/host_list.hpp"

namespace ferry {
namespace {

HostList parse_ok(const std::string& text, int default_slots = 1) {
  auto hosts = parse_host_option(text, default_slots);
  EXPECT_TRUE(hosts.ok()) << text << ": " << (hosts.ok() ? "" : hosts.error().message);
  return hosts.ok() ? *hosts : HostList{};
}

std::string parse_error(const std::string& text, int default_slots = 1) {
  auto hosts = parse_host_option(text, default_slots);
  EXPECT_FALSE(hosts.ok()) << text << " parsed";
  return hosts.ok() ? "" : hosts.error().message;
}

TEST(HostOption, HorovodSlotsPerHost) {
  HostList hosts = parse_ok("server1:4,server2:4");
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_EQ(hosts[0].name, "server1");
  EXPECT_EQ(hosts[0].slots, 4);
  EXPECT_EQ(hosts[1].name, "server2");
  EXPECT_EQ(hosts[1].slots, 4);
  EXPECT_EQ(hosts[0].origin, "-H");
  EXPECT_EQ(hosts[0].port, 0);
  EXPECT_EQ(hosts[0].max_slots, 0);
  EXPECT_TRUE(hosts[0].user.empty());
}

TEST(HostOption, OpenMpiRepeatedHostsAddSlots) {
  HostList hosts = parse_ok("a,a,b");
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_EQ(hosts[0].name, "a");
  EXPECT_EQ(hosts[0].slots, 2);
  EXPECT_EQ(hosts[1].name, "b");
  EXPECT_EQ(hosts[1].slots, 1);
}

TEST(HostOption, RepeatsWithSlotsAddAndKeepFirstPosition) {
  HostList hosts = parse_ok("b:2,a:1,b:3");
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_EQ(hosts[0].name, "b");
  EXPECT_EQ(hosts[0].slots, 5);
  EXPECT_EQ(hosts[1].name, "a");
}

TEST(HostOption, DefaultSlotsForBareHosts) {
  HostList hosts = parse_ok("a,b:2", 4);
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_EQ(hosts[0].slots, 4);
  EXPECT_EQ(hosts[1].slots, 2);
}

TEST(HostOption, HydraHostsList) {
  HostList hosts = parse_ok("h1:2,h2");
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_EQ(hosts[0].slots, 2);
  EXPECT_EQ(hosts[1].slots, 1);
}

TEST(HostOption, UserAtHost) {
  HostList hosts = parse_ok("root@gpu-a:8,gpu-b");
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_EQ(hosts[0].user, "root");
  EXPECT_EQ(hosts[0].name, "gpu-a");
  EXPECT_EQ(hosts[0].slots, 8);
  EXPECT_TRUE(hosts[1].user.empty());
}

TEST(HostOption, DifferentUsersAreDifferentHosts) {
  HostList hosts = parse_ok("root@a,a,root@a");
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_EQ(hosts[0].user, "root");
  EXPECT_EQ(hosts[0].slots, 2);
  EXPECT_EQ(hosts[1].user, "");
  EXPECT_EQ(hosts[1].slots, 1);
}

TEST(HostOption, Ipv4WithSlots) {
  HostList hosts = parse_ok("10.0.0.1:4,10.0.0.2");
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_EQ(hosts[0].name, "10.0.0.1");
  EXPECT_EQ(hosts[0].slots, 4);
}

TEST(HostOption, BracketedIpv6IsStoredWithoutBrackets) {
  HostList hosts = parse_ok("[::1]:2,[fe80::1%eth0],admin@[2001:db8::7]:3");
  ASSERT_EQ(hosts.size(), 3u);
  EXPECT_EQ(hosts[0].name, "::1");
  EXPECT_EQ(hosts[0].slots, 2);
  EXPECT_EQ(hosts[1].name, "fe80::1%eth0");
  EXPECT_EQ(hosts[1].slots, 1);
  EXPECT_EQ(hosts[2].user, "admin");
  EXPECT_EQ(hosts[2].name, "2001:db8::7");
  EXPECT_EQ(hosts[2].slots, 3);
}

TEST(HostOption, BareIpv6IsOneAddressWithDefaultSlots) {
  HostList hosts = parse_ok("2001:db8::1:4,::1", 2);
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_EQ(hosts[0].name, "2001:db8::1:4");
  EXPECT_EQ(hosts[0].slots, 2);
  EXPECT_EQ(hosts[1].name, "::1");
}

TEST(HostOption, SpacesAroundItemsAreTolerated) {
  HostList hosts = parse_ok(" a:1, b:2 ,c ");
  ASSERT_EQ(hosts.size(), 3u);
  EXPECT_EQ(hosts[1].name, "b");
  EXPECT_EQ(hosts[1].slots, 2);
  EXPECT_EQ(hosts[2].name, "c");
}

TEST(HostOption, BadSlotCountNamesFlagAndToken) {
  EXPECT_EQ(parse_error("a:1,a:x"),
            "-H: bad slot count 'x' in 'a:x' (expected a positive integer)");
  EXPECT_EQ(parse_error("a:0"), "-H: bad slot count '0' in 'a:0' (expected a positive integer)");
  EXPECT_EQ(parse_error("a:"), "-H: bad slot count '' in 'a:' (expected a positive integer)");
  EXPECT_NE(parse_error("a:-2").find("'a:-2'"), std::string::npos);
  EXPECT_NE(parse_error("a:+2").find("'a:+2'"), std::string::npos);
  EXPECT_NE(parse_error("a:1.5").find("'1.5'"), std::string::npos);
  EXPECT_NE(parse_error("[::1]:x").find("bad slot count 'x'"), std::string::npos);
  EXPECT_EQ(parse_error("a:99999999999999999999999"),
            "-H: bad slot count '99999999999999999999999' in 'a:99999999999999999999999' "
            "(expected at most 1000000)");
}

TEST(HostOption, EmptyItemsAreErrors) {
  for (const char* text : {"a,,b", "a,", ",a", "a, ,b", "", "  "}) {
    std::string message = parse_error(text);
    EXPECT_TRUE(message.starts_with("-H: ")) << text << ": " << message;
    EXPECT_TRUE(message.find("empty") != std::string::npos ||
                message.find("no hosts") != std::string::npos)
        << text << ": " << message;
  }
}

TEST(HostOption, BadNamesAreErrors) {
  EXPECT_NE(parse_error("a b").find("'a b'"), std::string::npos);
  EXPECT_NE(parse_error("-oProxyCommand=x").find("bad host name"), std::string::npos);
  EXPECT_NE(parse_error("user@").find("bad host name ''"), std::string::npos);
  EXPECT_NE(parse_error("@host").find("bad user name ''"), std::string::npos);
  EXPECT_NE(parse_error("a@b@c").find("bad host name 'b@c'"), std::string::npos);
  EXPECT_NE(parse_error("[::1").find("missing ']'"), std::string::npos);
  EXPECT_NE(parse_error("[::1]2").find("after ']'"), std::string::npos);
  EXPECT_NE(parse_error("[host]:2").find("bad IPv6 address 'host'"), std::string::npos);
  EXPECT_NE(parse_error("host:2:3").find("'host:2:3'"), std::string::npos);
  EXPECT_NE(parse_error("a;rm").find("'a;rm'"), std::string::npos);
}

TEST(HostOption, DefaultSlotsMustBePositive) {
  EXPECT_NE(parse_error("a", 0).find("default slot count"), std::string::npos);
}

}  // namespace
}  // namespace ferry
