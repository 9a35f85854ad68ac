// Hostfile dialects (Open MPI, Horovod, DeepSpeed, MPICH hydra), ferry's per-host keys,
// merging, and the example hostfiles shipped in hostfiles/.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ferry/hosts/host_list.hpp"

namespace ferry {
namespace {

// What a hostfile gives one host. `origin` is checked when set ("hosts.txt:N").
struct Host {
  std::string name = "";
  int slots = 1;
  int max_slots = 0;
  int port = 0;
  std::string user = "";
  std::string ferryd = "";
  std::string origin = "";
};

struct Parses {
  const char* what;
  std::string text;
  int default_slots;
  std::vector<Host> hosts;
};

const Parses kParses[] = {
    // The example from Open MPI's mpirun(1) / hostfile documentation.
    {"Open MPI's man page example",
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
     "yow.example.com slots=4 max-slots=4\n",
     1,
     {{.name = "foo.example.com", .origin = "hosts.txt:4"},
      {.name = "bar.example.com", .slots = 2, .origin = "hosts.txt:7"},
      {.name = "yow.example.com", .slots = 4, .max_slots = 4, .origin = "hosts.txt:11"}}},
    // The example from PRRTE's hostfile page, bare hosts taking the default.
    {"PRRTE's example with default slots",
     "# This is a comment line, and will be ignored\n"
     "node01  slots=10\n"
     "node13  slots=5\n"
     "\n"
     "node15\n"
     "node16\n"
     "node17  slots=3\n",
     2,
     {{.name = "node01", .slots = 10},
      {.name = "node13", .slots = 5},
      {.name = "node15", .slots = 2},
      {.name = "node16", .slots = 2},
      {.name = "node17", .slots = 3}}},
    {"Horovod and DeepSpeed lines",
     "server1 slots=4\nserver2 slots=4\nworker-1 slots=4\n",
     1,
     {{.name = "server1", .slots = 4},
      {.name = "server2", .slots = 4},
      {.name = "worker-1", .slots = 4}}},
    {"hydra's host:N",
     "host1:2\nhost2\nhost3:4 port=2222\n",
     1,
     {{.name = "host1", .slots = 2},
      {.name = "host2", .slots = 1},
      {.name = "host3", .slots = 4, .port = 2222}}},
    {"ferry's keys on the same line",
     "node1 slots=2 port=2222 user=root ferryd=/opt/ferry/bin/ferryd\n",
     1,
     {{.name = "node1",
       .slots = 2,
       .port = 2222,
       .user = "root",
       .ferryd = "/opt/ferry/bin/ferryd",
       .origin = "hosts.txt:1"}}},
    {"user@host and Open MPI's username key",
     "root@a slots=2\nb username=admin\n",
     1,
     {{.name = "a", .slots = 2, .user = "root"}, {.name = "b", .user = "admin"}}},
    {"IPv6 forms",
     "[::1]:2 port=2201\nfe80::1%eth0 slots=3\nroot@[2001:db8::5]\n",
     1,
     {{.name = "::1", .slots = 2, .port = 2201},
      {.name = "fe80::1%eth0", .slots = 3},
      {.name = "2001:db8::5", .user = "root"}}},
    {"comments, blank lines, tabs and CRLF",
     "// an Open MPI line comment\r\n"
     "   \t\r\n"
     "a slots=2   # trailing comment\r\n"
     "\tb\tslots=3 // another\r\n"
     "c#glued comment\n"
     "d ferryd=/opt//ferryd\n",
     1,
     {{.name = "a", .slots = 2, .origin = "hosts.txt:3"},
      {.name = "b", .slots = 3, .origin = "hosts.txt:4"},
      {.name = "c", .origin = "hosts.txt:5"},
      {.name = "d", .ferryd = "/opt//ferryd", .origin = "hosts.txt:6"}}},
    {"spaces around '=' and key aliases",
     "a slots = 4 max_slots= 6\nb count=2 slots_max=3\nc cpu=5\n",
     1,
     {{.name = "a", .slots = 4, .max_slots = 6},
      {.name = "b", .slots = 2, .max_slots = 3},
      {.name = "c", .slots = 5}}},
    {"repeated lines add slots, the first line is the origin",
     "a slots=2\nb\na slots=3\na\n",
     1,
     {{.name = "a", .slots = 6, .origin = "hosts.txt:1"}, {.name = "b", .origin = "hosts.txt:2"}}},
    {"one address, two ports: two hosts",
     "10.0.0.5 port=2201 slots=2\n10.0.0.5 port=2202 slots=2\n",
     1,
     {{.name = "10.0.0.5", .slots = 2, .port = 2201},
      {.name = "10.0.0.5", .slots = 2, .port = 2202}}},
    {"max_slots alone caps the default",
     "a max_slots=2\nb max_slots=8\n",
     4,
     {{.name = "a", .slots = 2, .max_slots = 2}, {.name = "b", .slots = 4, .max_slots = 8}}},
};

TEST(Hostfile, Parses) {
  for (const Parses& c : kParses) {
    SCOPED_TRACE(c.what);
    auto hosts = parse_hostfile_text(c.text, "hosts.txt", c.default_slots);
    ASSERT_TRUE(hosts.ok()) << hosts.error().message;
    ASSERT_EQ(hosts->size(), c.hosts.size());
    for (size_t i = 0; i < c.hosts.size(); ++i) {
      const HostEntry& got = (*hosts)[i];
      const Host& want = c.hosts[i];
      EXPECT_EQ(got.name, want.name) << i;
      EXPECT_EQ(got.slots, want.slots) << i;
      EXPECT_EQ(got.max_slots, want.max_slots) << i;
      EXPECT_EQ(got.port, want.port) << i;
      EXPECT_EQ(got.user, want.user) << i;
      EXPECT_EQ(got.ferryd, want.ferryd) << i;
      if (!want.origin.empty()) {
        EXPECT_EQ(got.origin, want.origin) << i;
      }
    }
  }
}

struct Fails {
  std::string text;
  std::string error;  // the whole one-line message: file:line, then what is wrong
};

const Fails kFails[] = {
    // Bad values name the file, the line and the token.
    {"a\nb slots=2\nc slots=abc\n",
     "hosts.txt:3: bad slots value 'abc' (expected a positive integer)"},
    {"c slots=0", "hosts.txt:1: bad slots value '0' (expected a positive integer)"},
    {"\nc:x\n", "hosts.txt:2: bad slot count 'x' in 'c:x' (expected a positive integer)"},
    {"c max_slots=-1", "hosts.txt:1: bad max_slots value '-1' (expected a positive integer)"},
    {"a port=0", "hosts.txt:1: bad port value '0' (expected 1-65535)"},
    {"a port=65536", "hosts.txt:1: bad port value '65536' (expected 1-65535)"},
    {"a port=", "hosts.txt:1: empty value for 'port'"},
    {"a ferryd=/opt/x;rm",
     "hosts.txt:1: bad ferryd value '/opt/x;rm' (a path of letters, digits, '/', '.', '-', '_', "
     "'+')"},
    {"a user=-x", "hosts.txt:1: bad user value '-x' (letters, digits, '.', '-', '_')"},
    // Unknown keys, hydra's extra keys among them.
    {"a\n\nb gpus=8\n",
     "hosts.txt:3: unknown key 'gpus' (known: slots, max_slots, port, user, ferryd)"},
    {"host1:2\nhost2:4 ifhn=eth0\n",
     "hosts.txt:2: unknown key 'ifhn' (known: slots, max_slots, port, user, ferryd)"},
    // Lines that are not `host key=value...`.
    {"slots=4", "hosts.txt:1: expected a host name before 'slots=4'"},
    {"a b", "hosts.txt:1: unexpected 'b' after the host name (expected key=value)"},
    {"a =4", "hosts.txt:1: expected a host name before 'a=4'"},
    {"-oProxyCommand=x", "hosts.txt:1: expected a host name before '-oProxyCommand=x'"},
    // Contradictions on one line.
    {"a slots=4 max_slots=2", "hosts.txt:1: max_slots=2 is less than slots=4"},
    {"a:2 slots=3", "hosts.txt:1: 'slots=3' sets the slot count a second time on this line"},
    {"root@a user=admin", "hosts.txt:1: 'user=admin' sets the user a second time on this line"},
    {"a port=1 port=2", "hosts.txt:1: 'port=2' sets the port a second time on this line"},
    // No host at all.
    {"# nothing here\n\n", "hosts.txt: no hosts (only comments and blank lines)"},
    {"", "hosts.txt: no hosts (only comments and blank lines)"},
};

TEST(Hostfile, Fails) {
  for (const Fails& c : kFails) {
    auto hosts = parse_hostfile_text(c.text, "hosts.txt");
    ASSERT_FALSE(hosts.ok()) << "parsed: " << c.text;
    EXPECT_EQ(hosts.error().message, c.error) << c.text;
  }
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
