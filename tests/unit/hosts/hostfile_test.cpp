// Hostfile dialects (Open MPI, Horovod, DeepSpeed, MPICH hydra), ferry's per-host keys,
// merging, and the example hostfiles shipped in hostfiles/.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "ferry/hosts/host_list.hpp"

namespace ferry {
namespace {

HostList parse_ok(const std::string& text, int default_slots = 1) {
  auto hosts = parse_hostfile_text(text, "hosts.txt", default_slots);
  EXPECT_TRUE(hosts.ok()) << (hosts.ok() ? "" : hosts.error().message);
  return hosts.ok() ? *hosts : HostList{};
}

std::string parse_error(const std::string& text) {
  auto hosts = parse_hostfile_text(text, "hosts.txt");
  EXPECT_FALSE(hosts.ok()) << "parsed: " << text;
  return hosts.ok() ? "" : hosts.error().message;
}

// The example from Open MPI's mpirun(1) / hostfile documentation.
TEST(Hostfile, OpenMpiManPageExample) {
  HostList hosts = parse_ok(
      "# This is an example hostfile.  Comments begin with #\n"
      "#\n"
      "# The following node is a single processor machine:\n"
      "foo.example.com\n"
      "\n"
      "# The following node is a dual-processor machine:\n"
      "bar.example.com slots=2\n"
      "\n"
      "# The following node is a quad-processor machine, and we absolutely\n"
      "# want to disallow over-subscribing it:\n"
      "yow.example.com slots=4 max-slots=4\n");
  ASSERT_EQ(hosts.size(), 3u);
  EXPECT_EQ(hosts[0].name, "foo.example.com");
  EXPECT_EQ(hosts[0].slots, 1);
  EXPECT_EQ(hosts[0].origin, "hosts.txt:4");
  EXPECT_EQ(hosts[1].name, "bar.example.com");
  EXPECT_EQ(hosts[1].slots, 2);
  EXPECT_EQ(hosts[1].max_slots, 0);
  EXPECT_EQ(hosts[2].name, "yow.example.com");
  EXPECT_EQ(hosts[2].slots, 4);
  EXPECT_EQ(hosts[2].max_slots, 4);
  EXPECT_EQ(hosts[2].origin, "hosts.txt:11");
}

// The example from PRRTE's hostfile page, bare hosts taking the default.
TEST(Hostfile, PrrteExampleWithDefaultSlots) {
  HostList hosts = parse_ok(
      "# This is a comment line, and will be ignored\n"
      "node01  slots=10\n"
      "node13  slots=5\n"
      "\n"
      "node15\n"
      "node16\n"
      "node17  slots=3\n",
      2);
  ASSERT_EQ(hosts.size(), 5u);
  EXPECT_EQ(hosts[0].slots, 10);
  EXPECT_EQ(hosts[1].slots, 5);
  EXPECT_EQ(hosts[2].slots, 2);
  EXPECT_EQ(hosts[3].slots, 2);
  EXPECT_EQ(hosts[4].name, "node17");
  EXPECT_EQ(hosts[4].slots, 3);
}

TEST(Hostfile, HorovodAndDeepSpeedLines) {
  HostList hosts = parse_ok("server1 slots=4\nserver2 slots=4\nworker-1 slots=4\n");
  ASSERT_EQ(hosts.size(), 3u);
  EXPECT_EQ(hosts[0].name, "server1");
  EXPECT_EQ(hosts[2].name, "worker-1");
  EXPECT_EQ(hosts[2].slots, 4);
}

TEST(Hostfile, HydraHostColonCount) {
  HostList hosts = parse_ok("host1:2\nhost2\nhost3:4 port=2222\n");
  ASSERT_EQ(hosts.size(), 3u);
  EXPECT_EQ(hosts[0].name, "host1");
  EXPECT_EQ(hosts[0].slots, 2);
  EXPECT_EQ(hosts[1].slots, 1);
  EXPECT_EQ(hosts[2].slots, 4);
  EXPECT_EQ(hosts[2].port, 2222);
}

TEST(Hostfile, HydraExtraKeysAreRejectedByName) {
  EXPECT_EQ(parse_error("host1:2\nhost2:4 ifhn=eth0\n"),
            "hosts.txt:2: unknown key 'ifhn' (known: slots, max_slots, port, user, ferryd)");
}

TEST(Hostfile, FerryKeysOnTheSameLine) {
  HostList hosts = parse_ok("node1 slots=2 port=2222 user=root ferryd=/opt/ferry/bin/ferryd\n");
  ASSERT_EQ(hosts.size(), 1u);
  EXPECT_EQ(hosts[0].name, "node1");
  EXPECT_EQ(hosts[0].slots, 2);
  EXPECT_EQ(hosts[0].port, 2222);
  EXPECT_EQ(hosts[0].user, "root");
  EXPECT_EQ(hosts[0].ferryd, "/opt/ferry/bin/ferryd");
}

TEST(Hostfile, UserAtHostAndOpenMpiUsernameKey) {
  HostList hosts = parse_ok("root@a slots=2\nb username=admin\n");
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_EQ(hosts[0].user, "root");
  EXPECT_EQ(hosts[0].name, "a");
  EXPECT_EQ(hosts[1].user, "admin");
}

TEST(Hostfile, Ipv6Forms) {
  HostList hosts = parse_ok("[::1]:2 port=2201\nfe80::1%eth0 slots=3\nroot@[2001:db8::5]\n");
  ASSERT_EQ(hosts.size(), 3u);
  EXPECT_EQ(hosts[0].name, "::1");
  EXPECT_EQ(hosts[0].slots, 2);
  EXPECT_EQ(hosts[0].port, 2201);
  EXPECT_EQ(hosts[1].name, "fe80::1%eth0");
  EXPECT_EQ(hosts[1].slots, 3);
  EXPECT_EQ(hosts[2].user, "root");
  EXPECT_EQ(hosts[2].name, "2001:db8::5");
}

TEST(Hostfile, CommentsBlankLinesTabsAndCrlf) {
  HostList hosts = parse_ok(
      "// an Open MPI line comment\r\n"
      "   \t\r\n"
      "a slots=2   # trailing comment\r\n"
      "\tb\tslots=3 // another\r\n"
      "c#glued comment\n"
      "d ferryd=/opt//ferryd\n");
  ASSERT_EQ(hosts.size(), 4u);
  EXPECT_EQ(hosts[0].name, "a");
  EXPECT_EQ(hosts[0].slots, 2);
  EXPECT_EQ(hosts[0].origin, "hosts.txt:3");
  EXPECT_EQ(hosts[1].name, "b");
  EXPECT_EQ(hosts[1].slots, 3);
  EXPECT_EQ(hosts[2].name, "c");
  EXPECT_EQ(hosts[3].ferryd, "/opt//ferryd");
}

TEST(Hostfile, SpacesAroundEqualsAndKeyAliases) {
  HostList hosts = parse_ok("a slots = 4 max_slots= 6\nb count=2 slots_max=3\nc cpu=5\n");
  ASSERT_EQ(hosts.size(), 3u);
  EXPECT_EQ(hosts[0].slots, 4);
  EXPECT_EQ(hosts[0].max_slots, 6);
  EXPECT_EQ(hosts[1].slots, 2);
  EXPECT_EQ(hosts[1].max_slots, 3);
  EXPECT_EQ(hosts[2].slots, 5);
}

TEST(Hostfile, RepeatedLinesAddSlots) {
  HostList hosts = parse_ok("a slots=2\nb\na slots=3\na\n");
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_EQ(hosts[0].name, "a");
  EXPECT_EQ(hosts[0].slots, 6);
  EXPECT_EQ(hosts[0].origin, "hosts.txt:1");
  EXPECT_EQ(hosts[1].name, "b");
}

TEST(Hostfile, SameAddressDifferentPortsAreDifferentHosts) {
  HostList hosts = parse_ok("10.0.0.5 port=2201 slots=2\n10.0.0.5 port=2202 slots=2\n");
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_EQ(hosts[0].port, 2201);
  EXPECT_EQ(hosts[1].port, 2202);
  EXPECT_EQ(hosts[1].slots, 2);
}

TEST(Hostfile, MaxSlotsAloneCapsTheDefault) {
  auto hosts = parse_hostfile_text("a max_slots=2\nb max_slots=8\n", "h", 4);
  ASSERT_TRUE(hosts.ok()) << hosts.error().message;
  EXPECT_EQ((*hosts)[0].slots, 2);
  EXPECT_EQ((*hosts)[0].max_slots, 2);
  EXPECT_EQ((*hosts)[1].slots, 4);
}

TEST(Hostfile, BadSlotsValueNamesFileLineAndToken) {
  EXPECT_EQ(parse_error("a\nb slots=2\nc slots=abc\n"),
            "hosts.txt:3: bad slots value 'abc' (expected a positive integer)");
  EXPECT_EQ(parse_error("c slots=0"),
            "hosts.txt:1: bad slots value '0' (expected a positive integer)");
  EXPECT_EQ(parse_error("\nc:x\n"),
            "hosts.txt:2: bad slot count 'x' in 'c:x' (expected a positive integer)");
  EXPECT_EQ(parse_error("c max_slots=-1"),
            "hosts.txt:1: bad max_slots value '-1' (expected a positive integer)");
}

TEST(Hostfile, BadLinesAreErrors) {
  EXPECT_EQ(parse_error("a\n\nb gpus=8\n"),
            "hosts.txt:3: unknown key 'gpus' (known: slots, max_slots, port, user, ferryd)");
  EXPECT_EQ(parse_error("a port=0"), "hosts.txt:1: bad port value '0' (expected 1-65535)");
  EXPECT_EQ(parse_error("a port=65536"), "hosts.txt:1: bad port value '65536' (expected 1-65535)");
  EXPECT_EQ(parse_error("a port="), "hosts.txt:1: empty value for 'port'");
  EXPECT_EQ(parse_error("slots=4"), "hosts.txt:1: expected a host name before 'slots=4'");
  EXPECT_EQ(parse_error("a b"),
            "hosts.txt:1: unexpected 'b' after the host name (expected key=value)");
  EXPECT_EQ(parse_error("a =4"), "hosts.txt:1: expected a host name before 'a=4'");
  EXPECT_EQ(parse_error("a slots=4 max_slots=2"), "hosts.txt:1: max_slots=2 is less than slots=4");
  EXPECT_EQ(parse_error("a:2 slots=3"),
            "hosts.txt:1: 'slots=3' sets the slot count a second time on this line");
  EXPECT_EQ(parse_error("root@a user=admin"),
            "hosts.txt:1: 'user=admin' sets the user a second time on this line");
  EXPECT_EQ(parse_error("a port=1 port=2"),
            "hosts.txt:1: 'port=2' sets the port a second time on this line");
  EXPECT_EQ(parse_error("a ferryd=/opt/x;rm"),
            "hosts.txt:1: bad ferryd value '/opt/x;rm' (a path of letters, digits, '/', '.', "
            "'-', '_', '+')");
  EXPECT_NE(parse_error("-oProxyCommand=x").find("hosts.txt:1:"), std::string::npos);
  EXPECT_NE(parse_error("a user=-x").find("bad user value '-x'"), std::string::npos);
}

TEST(Hostfile, OnlyCommentsIsAnError) {
  EXPECT_EQ(parse_error("# nothing here\n\n"),
            "hosts.txt: no hosts (only comments and blank lines)");
  EXPECT_EQ(parse_error(""), "hosts.txt: no hosts (only comments and blank lines)");
}

TEST(Hostfile, ReadsAFileAndNamesItInOrigins) {
  std::string path = testing::TempDir() + "ferry_hostfile_test_" + std::to_string(getpid());
  {
    std::ofstream out(path);
    out << "# two hosts\nnode1 slots=2\nnode2 port=2222\n";
  }
  auto hosts = read_hostfile(path, 3);
  std::filesystem::remove(path);
  ASSERT_TRUE(hosts.ok()) << hosts.error().message;
  ASSERT_EQ(hosts->size(), 2u);
  EXPECT_EQ((*hosts)[0].origin, path + ":2");
  EXPECT_EQ((*hosts)[1].slots, 3);
  EXPECT_EQ((*hosts)[1].port, 2222);
}

TEST(Hostfile, MissingFileSaysWhy) {
  auto hosts = read_hostfile("/nonexistent/hosts.txt");
  ASSERT_FALSE(hosts.ok());
  EXPECT_EQ(hosts.error().message,
            "/nonexistent/hosts.txt: cannot read: No such file or directory");
}

TEST(Hostfile, DirectoryIsNotAHostfile) {
  auto hosts = read_hostfile(testing::TempDir());
  ASSERT_FALSE(hosts.ok());
  EXPECT_NE(hosts.error().message.find("cannot read: Is a directory"), std::string::npos)
      << hosts.error().message;
}

TEST(MergeHosts, SameNameUserPortMerge) {
  HostEntry a{"a", "", 0, 2, 4, "", "f:1"};
  HostEntry a_again{"a", "", 0, 3, 5, "/opt/ferryd", "f:2"};
  HostEntry a_other_port{"a", "", 2222, 1, 0, "", "f:3"};
  HostEntry a_other_user{"a", "root", 0, 1, 0, "", "f:4"};
  HostList into{a};
  merge_hosts(into, {a_again, a_other_port, a_other_user});
  ASSERT_EQ(into.size(), 3u);
  EXPECT_EQ(into[0].slots, 5);
  EXPECT_EQ(into[0].max_slots, 9);
  EXPECT_EQ(into[0].ferryd, "/opt/ferryd");
  EXPECT_EQ(into[0].origin, "f:1");
  EXPECT_EQ(into[1].port, 2222);
  EXPECT_EQ(into[2].user, "root");
}

TEST(MergeHosts, LimitDropsWhenOnePartHasNoneAndEmptyFerrydKeeps) {
  HostList into{HostEntry{"a", "", 0, 2, 2, "/x/ferryd", "f:1"}};
  merge_hosts(into, {HostEntry{"a", "", 0, 1, 0, "", "f:2"}});
  ASSERT_EQ(into.size(), 1u);
  EXPECT_EQ(into[0].slots, 3);
  EXPECT_EQ(into[0].max_slots, 0);
  EXPECT_EQ(into[0].ferryd, "/x/ferryd");
}

std::filesystem::path hostfiles_dir() {
#ifdef FERRY_SOURCE_DIR
  return std::filesystem::path(FERRY_SOURCE_DIR) / "hostfiles";
#else
  // tests/unit/hostfile_test.cpp → <source>/hostfiles
  return std::filesystem::path(__FILE__).parent_path() / ".." / ".." / "hostfiles";
#endif
}

TEST(Hostfile, EveryShippedExampleParses) {
  std::filesystem::path dir = hostfiles_dir();
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  int parsed = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    auto hosts = read_hostfile(entry.path().string());
    EXPECT_TRUE(hosts.ok()) << (hosts.ok() ? "" : hosts.error().message);
    ++parsed;
  }
  EXPECT_GE(parsed, 4);
}

TEST(Hostfile, ShippedExamplesSayWhatTheyShow) {
  std::filesystem::path dir = hostfiles_dir();
  auto two = read_hostfile((dir / "two-nodes.txt").string());
  ASSERT_TRUE(two.ok()) << two.error().message;
  EXPECT_EQ(two->size(), 2u);

  auto host_net = read_hostfile((dir / "docker-host-network.txt").string());
  ASSERT_TRUE(host_net.ok()) << host_net.error().message;
  for (const HostEntry& h : *host_net) EXPECT_NE(h.port, 0) << h.origin;

  auto bridge = read_hostfile((dir / "docker-bridge.txt").string());
  ASSERT_TRUE(bridge.ok()) << bridge.error().message;
  ASSERT_GE(bridge->size(), 2u);
  for (const HostEntry& h : *bridge) {
    EXPECT_EQ(h.name, (*bridge)[0].name) << h.origin;
    EXPECT_NE(h.port, 0) << h.origin;
  }
  EXPECT_NE((*bridge)[0].port, (*bridge)[1].port);

  auto npu = read_hostfile((dir / "ascend-8npu-pair.txt").string());
  ASSERT_TRUE(npu.ok()) << npu.error().message;
  ASSERT_EQ(npu->size(), 2u);
  for (const HostEntry& h : *npu) EXPECT_EQ(h.slots, 8) << h.origin;
}

}  // namespace
}  // namespace ferry
