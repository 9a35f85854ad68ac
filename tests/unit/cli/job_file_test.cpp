#include "ferry/cli/job_file.hpp"

#include <gtest/gtest.h>

#include <fstream>

namespace ferry {
namespace {

Result<JobFile> parse(const std::string& text, const std::string& file = "job.toml") {
  return parse_job_file_text(text, file, FrontendConfig{});
}

std::string error_of(const std::string& text) {
  auto r = parse(text);
  return r.ok() ? "(no error)" : r.error().message;
}

TEST(JobFile, EveryTableOfTheSchema) {
  auto r = parse(R"(
np = 8
command = ["python3", "train.py", "--epochs", "3"]
wdir = "/data/run1"
oversubscribe = true
start_timeout = 45
kill_grace = 2.5
stdin = "none"
verbose = true
export = ["PATH", "A=1"]

[defaults]
slots = 4
port = 2222
user = "root"
ferryd = "/opt/ferry/bin/ferryd"
devices = [0, 1, 2, 3]

[[hosts]]
name = "node1"

[[hosts]]
name = "10.0.0.5"
port = 2201
user = "alice"
slots = 2
max_slots = 2
ferryd = "/usr/local/bin/ferryd"
devices = [4, 5]

[ssh]
identity_file = "/keys/id_ed25519"
config_file = "/etc/ferry/ssh_config"
accept_new = true
heartbeat = 10

[environment]
NCCL_DEBUG = "INFO"
OMP_NUM_THREADS = 4
NCCL_IB_DISABLE = true
RATIO = 0.5

[binding]
map_by = "node:PE=2"
bind_to = "core"
rank_by = "slot"
cpus_per_rank = 4
bind_mem = true
devices_per_rank = 1
isolate_devices = true
report_bindings = true

[output]
tag = "openmpi"
timestamps = true
merge_stderr = true
dir = "logs"
layout = "openmpi"
)");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const FrontendConfig& c = r->config;
  EXPECT_EQ(c.job.np, 8);
  EXPECT_EQ(c.job.command, (std::vector<std::string>{"python3", "train.py", "--epochs", "3"}));
  EXPECT_EQ(c.job.wdir, "/data/run1");
  EXPECT_TRUE(c.job.oversubscribe);
  EXPECT_EQ(c.job.start_timeout_s, 45);
  EXPECT_DOUBLE_EQ(c.job.kill_grace_s, 2.5);
  EXPECT_EQ(c.job.stdin_rank, -1);
  EXPECT_TRUE(c.job.verbose);
  EXPECT_EQ(r->default_slots, 4);
  EXPECT_EQ(c.ssh.port, 2222);
  EXPECT_EQ(c.ssh.user, "root");
  EXPECT_EQ(c.job.ferryd_path, "/opt/ferry/bin/ferryd");
  EXPECT_EQ(c.job.binding.devices, (std::vector<int>{0, 1, 2, 3}));
  ASSERT_EQ(c.job.hosts.size(), 2u);
  EXPECT_EQ(c.job.hosts[0].name, "node1");
  EXPECT_EQ(c.job.hosts[0].slots, 4);               // [defaults] slots
  EXPECT_EQ(c.job.hosts[0].origin, "job.toml:19");  // its [[hosts]] line
  EXPECT_EQ(c.job.hosts[1].port, 2201);
  EXPECT_EQ(c.job.hosts[1].user, "alice");
  EXPECT_EQ(c.job.hosts[1].slots, 2);
  EXPECT_EQ(c.job.hosts[1].max_slots, 2);
  EXPECT_EQ(c.job.hosts[1].ferryd, "/usr/local/bin/ferryd");
  ASSERT_EQ(c.job.host_devices.size(), 1u);
  EXPECT_EQ(c.job.host_devices[0].name, "10.0.0.5");
  EXPECT_EQ(c.job.host_devices[0].port, 2201);
  EXPECT_EQ(c.job.host_devices[0].devices, (std::vector<int>{4, 5}));
  EXPECT_EQ(c.ssh.identity_file, "/keys/id_ed25519");
  EXPECT_EQ(c.ssh.config_file, "/etc/ferry/ssh_config");
  EXPECT_TRUE(c.ssh.accept_new);
  EXPECT_EQ(c.job.heartbeat_s, 10);
  EXPECT_EQ(r->exports,
            (std::vector<std::string>{"NCCL_DEBUG=INFO", "OMP_NUM_THREADS=4", "NCCL_IB_DISABLE=1",
                                      "RATIO=0.5", "PATH", "A=1"}));
  EXPECT_EQ(c.job.placement.mapping, HostMapping::kByNode);
  EXPECT_EQ(c.job.placement.order, RankOrder::kBySlot);
  EXPECT_EQ(c.job.binding.pe, 2);
  EXPECT_EQ(c.job.binding.bind_to, BindTo::kCore);
  EXPECT_EQ(c.job.binding.map_by, MapBy::kNode);
  EXPECT_EQ(c.job.binding.cpus_per_rank, 4);
  EXPECT_TRUE(c.job.binding.bind_mem);
  EXPECT_EQ(c.job.binding.devices_per_rank, 1);
  EXPECT_TRUE(c.job.binding.isolate_devices);
  EXPECT_TRUE(c.job.binding.report_bindings);
  EXPECT_EQ(c.output.tag, TagStyle::kOpenMpi);
  EXPECT_TRUE(c.output.timestamps);
  EXPECT_TRUE(c.output.merge_stderr);
  EXPECT_EQ(c.output.output_dir, "logs");
  EXPECT_EQ(c.output.layout, FileLayout::kOpenMpi);
}

TEST(JobFile, HostStringsAndTablesMixAndRepeatsMerge) {
  auto r = parse(R"(hosts = ["a:2, b", {name = "c", slots = 3}, "a:1", "[fe80::1]:2"])");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const HostList& h = r->config.job.hosts;
  ASSERT_EQ(h.size(), 4u);
  EXPECT_EQ(h[0].name, "a");
  EXPECT_EQ(h[0].slots, 3);
  EXPECT_EQ(h[1].name, "b");
  EXPECT_EQ(h[2].slots, 3);
  EXPECT_EQ(h[3].name, "fe80::1");
  EXPECT_EQ(h[3].slots, 2);
}

TEST(JobFile, PerHostDevicesKeepTheHostsIdentity) {
  // Two containers behind one address are two hosts, each with its own devices; a host
  // named twice has one list, which both entries must agree on.
  auto r = parse(R"(
[[hosts]]
name = "10.0.0.5"
port = 2201
devices = [0, 1]
[[hosts]]
name = "10.0.0.5"
port = 2202
user = "bob"
devices = [2, 3]
[[hosts]]
name = "10.0.0.5"
port = 2201
devices = [0, 1]
)");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& hd = r->config.job.host_devices;
  ASSERT_EQ(hd.size(), 2u);
  EXPECT_EQ(hd[0].port, 2201);
  EXPECT_EQ(hd[0].user, "");
  EXPECT_EQ(hd[0].devices, (std::vector<int>{0, 1}));
  EXPECT_EQ(hd[1].port, 2202);
  EXPECT_EQ(hd[1].user, "bob");
  EXPECT_EQ(hd[1].devices, (std::vector<int>{2, 3}));
  EXPECT_EQ(error_of("[[hosts]]\nname = \"a\"\ndevices = [0]\n"
                     "[[hosts]]\nname = \"a\"\ndevices = [1]\n"),
            "job.toml:6: [[hosts]] a: devices differ from an earlier entry of this host");
}

TEST(JobFile, HostfilePathsAreRelativeToTheJobFile) {
  auto r = parse_job_file_text("hostfile = [\"hosts.txt\", \"/abs/h\"]", "/etc/jobs/job.toml",
                               FrontendConfig{});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->hostfiles, (std::vector<std::string>{"/etc/jobs/hosts.txt", "/abs/h"}));
  auto bare = parse("hostfile = \"h.txt\"");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->hostfiles, (std::vector<std::string>{"h.txt"}));
}

TEST(JobFile, ValuesApplyOverTheBaseAndAbsentKeysKeepIt) {
  FrontendConfig base;
  base.output.tag = TagStyle::kNone;
  base.job.start_timeout_s = 99;
  auto r = parse_job_file_text("np = 2", "j.toml", base);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->config.output.tag, TagStyle::kNone);
  EXPECT_EQ(r->config.job.start_timeout_s, 99);
  EXPECT_EQ(r->config.job.np, 2);
}

TEST(JobFile, ErrorsNameFileLineAndTheBadToken) {
  EXPECT_EQ(error_of("np = 4\n[defaults]\nslot = 4\n"),
            "job.toml:3: unknown key 'slot' in [defaults] (known: slots, port, user, ferryd, "
            "ship_ferryd, ferryd_dir, devices)");
  EXPECT_EQ(error_of("np = 4\n[defaults]\nship_ferryd = \"sometimes\"\n"),
            "job.toml:3: [defaults] ship_ferryd 'sometimes' is not auto, always or never");
  EXPECT_EQ(error_of("\n\nnp = \"four\""),
            "job.toml:3: np must be an integer (1-1000000), not a string");
  EXPECT_EQ(error_of("np = 0"), "job.toml:1: bad np 0 (expected 1-1000000)");
  EXPECT_EQ(error_of("[[hosts]]\nname = \"a\"\nport = 70000\n"),
            "job.toml:3: bad port 70000 (expected 1-65535)");
  EXPECT_EQ(error_of("[[hosts]]\nslots = 2\n"), "job.toml:1: a [[hosts]] entry needs a name");
  EXPECT_EQ(error_of("hosts = [\"a:x\"]"),
            "job.toml:1: hosts: bad slot count 'x' in 'a:x' (expected a positive integer)");
  EXPECT_EQ(error_of("[binding]\nmap_by = \"diagonal\""),
            "job.toml:2: [binding] map_by: unknown mapping 'diagonal' in 'diagonal' (expected "
            "slot, node, core, hwthread, numa, socket or ppr:N:node)");
  EXPECT_EQ(
      error_of("[output]\ntag = \"fancy\""),
      "job.toml:2: [output] bad tag 'fancy' (expected horovod, host, openmpi, mpich or none)");
  EXPECT_EQ(error_of("command = \"python train.py\""),
            "job.toml:1: command must be an array of words such as [\"python3\", \"train.py\"] "
            "(no shell splitting)");
  EXPECT_EQ(error_of("stdin = \"all\""),
            "job.toml:1: stdin must be a rank number or \"none\" (ferry gives stdin to one rank "
            "at most)");
  EXPECT_EQ(error_of("[environment]\nX = [1]"),
            "job.toml:2: [environment] X must be a string, number or boolean, not an array");
  EXPECT_EQ(error_of("[environment]\n\"1BAD\" = \"x\""),
            "job.toml:2: [environment] '1BAD' is not a variable name (letters, digits, '_')");
  EXPECT_EQ(error_of("export = [\"A B\"]"),
            "job.toml:1: export: 'A B' is not VAR, VAR=value or a pattern such as NCCL_*");
  EXPECT_EQ(error_of("[[hosts]]\nname = \"root@a\""),
            "job.toml:1: [[hosts]] name 'root@a' carries a user; use user = \"root\"");
  EXPECT_EQ(error_of("[defaults]\nferryd = \"/x;rm\""),
            "job.toml:2: [defaults] bad ferryd '/x;rm' (a path of letters, digits, '/', '.', "
            "'-', '_', '+')");
  EXPECT_EQ(error_of("defaults = 3"),
            "job.toml:1: defaults must be a table ([defaults]), not an integer");
}

TEST(JobFile, SyntaxErrorsAreOneLineWithTheLine) {
  std::string e = error_of("np = 4\nhosts = [\n");
  EXPECT_TRUE(e.starts_with("job.toml:")) << e;
  EXPECT_NE(e.find("not valid TOML"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  e = error_of("a = 1\na = 2\n");
  EXPECT_TRUE(e.starts_with("job.toml:2:")) << e;
}

TEST(JobFile, NonAsciiOnlyInStringsAndComments) {
  // toml++ 3.3 reaches __builtin_unreachable on many non-ASCII characters outside strings
  // (found by fuzz_job_file); such text is refused before toml++ sees it.
  EXPECT_EQ(error_of("np = 2\nx = \xc3\xa9\n"),
            "job.toml:2: non-ASCII character outside a string or comment (column 5)");
  EXPECT_EQ(error_of("t = \xcd\xab"),
            "job.toml:1: non-ASCII character outside a string or comment (column 5)");
  // Valid TOML, but toml++ 3.3 tests the character after the backslash for whitespace.
  EXPECT_EQ(error_of("s = \"\"\"a\\\n  \xc2\xa7\"\"\""),
            "job.toml:2: non-ASCII character right after a line-ending backslash in a "
            "multi-line string, which this toml++ cannot read; put it on the same line "
            "(column 3)");
  // A quote right after a value opens no string for toml++: what follows is still code.
  EXPECT_EQ(error_of("np =1'''\xcf\x91'''"),
            "job.toml:1: non-ASCII character outside a string or comment (column 9)");
  auto ok = parse(
      "# caf\xc3\xa9\n[environment]\nA = \"caf\xc3\xa9 \\\" \xc3\xa9\"\n"
      "B = 'caf\xc3\xa9'\nC = \"\"\"\n\xc3\xa9\"\"\"\n\"k\xc3\xa9\" = \"v\"\n");
  EXPECT_FALSE(ok.ok());  // the quoted key is not a variable name: toml++ did parse it
  EXPECT_NE(ok.error().message.find("is not a variable name"), std::string::npos)
      << ok.error().message;
  auto fine = parse("# caf\xc3\xa9\n[environment]\nA = \"caf\xc3\xa9\"\nB = '\xc3\xa9'\n");
  ASSERT_TRUE(fine.ok()) << fine.error().message;
  EXPECT_EQ(fine->exports, (std::vector<std::string>{"A=caf\xc3\xa9", "B=\xc3\xa9"}));
}

TEST(JobFile, ReadingRefusesYamlAndMissingFiles) {
  auto y = read_job_file("horovod.yaml", FrontendConfig{});
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.error().message.find("TOML job file"), std::string::npos);
  auto m = read_job_file("/nonexistent/job.toml", FrontendConfig{});
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().message, "/nonexistent/job.toml: cannot read: No such file or directory");
}

TEST(JobFile, TheShippedExampleParses) {
  auto r = read_job_file(FERRY_SOURCE_DIR "/examples/job.toml", FrontendConfig{});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->config.job.hosts.empty());
  EXPECT_FALSE(r->config.job.command.empty());
}

TEST(JobFile, AUtf8ByteOrderMarkIsSkipped) {
  auto r = parse("\xEF\xBB\xBFnp = 3\n[environment]\nA = \"1\"\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->config.job.np, 3);
  // Only at the start: elsewhere it is a non-ASCII character outside a string.
  EXPECT_NE(error_of("np = 3\n\xEF\xBB\xBF\n"), "(no error)");
}

TEST(JobFile, NumberRangesReadAsWritten) {
  EXPECT_EQ(error_of("kill_grace = 5000.0\n"), "job.toml:1: bad kill_grace (expected 0 to 3600)");
  EXPECT_EQ(error_of("kill_grace = nan\n"), "job.toml:1: bad kill_grace (expected 0 to 3600)");
}

}  // namespace
}  // namespace ferry
