// The host option (`-H`, `--host`, horovodrun's `--hosts`): the forms mpirun, horovodrun and
// hydra users type, as tables of input and expected hosts or expected one-line error.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ferry/hosts/host_list.hpp"

namespace ferry {
namespace {

// What -H gives one host; every -H host also has origin "-H", port 0 and no max_slots.
struct Host {
  std::string name;
  std::string user;
  int slots = 1;
};

struct Parses {
  const char* what;
  std::string text;
  int default_slots;
  std::vector<Host> hosts;
};

const Parses kParses[] = {
    {"Horovod: slots per host", "server1:4,server2:4", 1, {{"server1", "", 4}, {"server2", "", 4}}},
    {"Open MPI: repeated hosts add slots", "a,a,b", 1, {{"a", "", 2}, {"b", "", 1}}},
    {"repeats with slots add up and keep the first position",
     "b:2,a:1,b:3",
     1,
     {{"b", "", 5}, {"a", "", 1}}},
    {"bare hosts get the default slots", "a,b:2", 4, {{"a", "", 4}, {"b", "", 2}}},
    {"hydra: host:N and bare host", "h1:2,h2", 1, {{"h1", "", 2}, {"h2", "", 1}}},
    {"user@host", "root@gpu-a:8,gpu-b", 1, {{"gpu-a", "root", 8}, {"gpu-b", "", 1}}},
    {"different users are different hosts", "root@a,a,root@a", 1, {{"a", "root", 2}, {"a", "", 1}}},
    {"IPv4 with slots", "10.0.0.1:4,10.0.0.2", 1, {{"10.0.0.1", "", 4}, {"10.0.0.2", "", 1}}},
    {"bracketed IPv6 is stored without brackets",
     "[::1]:2,[fe80::1%eth0],admin@[2001:db8::7]:3",
     1,
     {{"::1", "", 2}, {"fe80::1%eth0", "", 1}, {"2001:db8::7", "admin", 3}}},
    {"bare IPv6 is one address with the default slots",
     "2001:db8::1:4,::1",
     2,
     {{"2001:db8::1:4", "", 2}, {"::1", "", 2}}},
    {"spaces around items are tolerated",
     " a:1, b:2 ,c ",
     1,
     {{"a", "", 1}, {"b", "", 2}, {"c", "", 1}}},
};

TEST(HostOption, Parses) {
  for (const Parses& c : kParses) {
    SCOPED_TRACE(std::string(c.what) + ": '" + c.text + "'");
    auto hosts = parse_host_option(c.text, c.default_slots);
    ASSERT_TRUE(hosts.ok()) << hosts.error().message;
    ASSERT_EQ(hosts->size(), c.hosts.size());
    for (size_t i = 0; i < c.hosts.size(); ++i) {
      const HostEntry& got = (*hosts)[i];
      EXPECT_EQ(got.name, c.hosts[i].name) << i;
      EXPECT_EQ(got.user, c.hosts[i].user) << i;
      EXPECT_EQ(got.slots, c.hosts[i].slots) << i;
      EXPECT_EQ(got.origin, "-H") << i;
      EXPECT_EQ(got.port, 0) << i;
      EXPECT_EQ(got.max_slots, 0) << i;
      EXPECT_EQ(got.ferryd, "") << i;
    }
  }
}

struct Fails {
  std::string text;
  std::string error;  // the whole one-line message
  int default_slots = 1;
};

const Fails kFails[] = {
    // Slot counts: the flag, the bad count and the token.
    {"a:1,a:x", "-H: bad slot count 'x' in 'a:x' (expected a positive integer)"},
    {"a:0", "-H: bad slot count '0' in 'a:0' (expected a positive integer)"},
    {"a:", "-H: bad slot count '' in 'a:' (expected a positive integer)"},
    {"a:-2", "-H: bad slot count '-2' in 'a:-2' (expected a positive integer)"},
    {"a:+2", "-H: bad slot count '+2' in 'a:+2' (expected a positive integer)"},
    {"a:1.5", "-H: bad slot count '1.5' in 'a:1.5' (expected a positive integer)"},
    {"[::1]:x", "-H: bad slot count 'x' in '[::1]:x' (expected a positive integer)"},
    {"a:99999999999999999999999",
     "-H: bad slot count '99999999999999999999999' in 'a:99999999999999999999999' "
     "(expected at most 1000000)"},
    // Empty items and empty text.
    {"a,,b", "-H: empty host in 'a,,b' (two commas in a row or a comma at either end)"},
    {"a,", "-H: empty host in 'a,' (two commas in a row or a comma at either end)"},
    {",a", "-H: empty host in ',a' (two commas in a row or a comma at either end)"},
    {"a, ,b", "-H: empty host in 'a, ,b' (two commas in a row or a comma at either end)"},
    {"", "-H: no hosts given"},
    {"  ", "-H: no hosts given"},
    // Names that are not host names (some would be ssh options on a command line).
    {"a b", "-H: space inside 'a b' (separate hosts with commas)"},
    {"-oProxyCommand=x",
     "-H: bad host name '-oProxyCommand=x' in '-oProxyCommand=x' (letters, digits, '.', '-', "
     "'_')"},
    {"user@", "-H: bad host name '' in 'user@' (letters, digits, '.', '-', '_')"},
    {"@host", "-H: bad user name '' in '@host' (letters, digits, '.', '-', '_')"},
    {"a@b@c", "-H: bad host name 'b@c' in 'a@b@c' (letters, digits, '.', '-', '_')"},
    {"[::1", "-H: missing ']' in '[::1'"},
    {"[::1]2", "-H: unexpected '2' after ']' in '[::1]2' (expected ':slots')"},
    {"[host]:2", "-H: bad IPv6 address 'host' in '[host]:2'"},
    {"host:2:3",
     "-H: bad host 'host:2:3' in 'host:2:3' (write IPv6 addresses as [addr] or [addr]:slots)"},
    {"a;rm", "-H: bad host name 'a;rm' in 'a;rm' (letters, digits, '.', '-', '_')"},
    // The caller's default must be usable.
    {"a", "-H: default slot count must be positive (got 0)", 0},
};

TEST(HostOption, Fails) {
  for (const Fails& c : kFails) {
    auto hosts = parse_host_option(c.text, c.default_slots);
    ASSERT_FALSE(hosts.ok()) << "'" << c.text << "' parsed";
    EXPECT_EQ(hosts.error().message, c.error) << "'" << c.text << "'";
  }
}

}  // namespace
}  // namespace ferry
