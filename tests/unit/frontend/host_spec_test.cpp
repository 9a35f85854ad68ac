// What each host is sent (make_host_spec), rule by rule, without a host: its devices, the
// stdin rank, the wdir fallback, the heartbeat, the torch --local-rank argument, and what
// every host shares.
#include "ferry/frontend/host_spec.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

namespace ferry {
namespace {

HostEntry entry(const std::string& name, int slots, int port = 0, const std::string& user = "") {
  HostEntry h;
  h.name = name;
  h.slots = slots;
  h.port = port;
  h.user = user;
  return h;
}

// Two hosts of two slots, four ranks: a holds ranks 0-1, b ranks 2-3.
JobOptions base_options() {
  JobOptions o;
  o.hosts = {entry("a", 2), entry("b", 2)};
  o.command = {"python3", "train.py"};
  o.wdir = "/home/me/run";
  o.kill_grace_s = 2.5;
  return o;
}

struct Built {
  std::vector<wire::HostSpec> specs;  // one per placed host, in placement order
};

// Builds every host's spec as the job does; `local[i]` says whether host i is this machine.
Built build(const JobOptions& o, std::vector<bool> local = {}) {
  auto placed = place_job(o);
  EXPECT_TRUE(placed.ok()) << placed.error().message;
  SharedSpec shared{"00000000000000ab", {"WORLD_SIZE=4"}, "s3cret", "(vector,(0,2,2))"};
  shared.node_names = {"node-a", "node-b"};
  shared.node_of_rank = {0, 0, 1, 1};
  Built b;
  for (size_t i = 0; i < placed->hosts.size(); ++i) {
    HostInputs in{&placed->hosts[i],
                  i < local.size() && local[i],
                  {"NCCL_SOCKET_IFNAME=eth0"},
                  static_cast<uint32_t>(i)};
    b.specs.push_back(make_host_spec(o, *placed, in, shared));
  }
  return b;
}

struct Case {
  const char* name;
  std::function<void(JobOptions&)> set;
  std::vector<bool> local;
  std::function<void(const std::vector<wire::HostSpec>&)> check;
};

TEST(MakeHostSpec, Rules) {
  using Specs = std::vector<wire::HostSpec>;
  const std::vector<Case> cases = {
      {"devices: the job's list when no host has its own",
       [](JobOptions& o) {
         o.binding.devices = {4, 5};
       },
       {},
       [](const Specs& s) {
         EXPECT_EQ(s[0].binding.devices, (std::vector<int>{4, 5}));
         EXPECT_EQ(s[1].binding.devices, (std::vector<int>{4, 5}));
       }},
      {"devices: a host's own list wins over the job's",
       [](JobOptions& o) {
         o.binding.devices = {4, 5};
         o.host_devices = {{"b", "", 0, {0, 1}}};
       },
       {},
       [](const Specs& s) {
         EXPECT_EQ(s[0].binding.devices, (std::vector<int>{4, 5}));
         EXPECT_EQ(s[1].binding.devices, (std::vector<int>{0, 1}));
       }},
      {"devices: matched by name, user and port, not by name alone",
       [](JobOptions& o) {
         o.hosts = {entry("10.0.0.5", 2, 2201), entry("10.0.0.5", 2, 2202, "bob")};
         o.host_devices = {{"10.0.0.5", "", 2202, {9}}, {"10.0.0.5", "bob", 2202, {2, 3}}};
       },
       {},
       [](const Specs& s) {
         EXPECT_EQ(s[0].binding.devices, std::vector<int>{});
         EXPECT_EQ(s[1].binding.devices, (std::vector<int>{2, 3}));
       }},
      {"devices: the rest of the binding is the job's on every host",
       [](JobOptions& o) {
         o.binding.devices_per_rank = 2;
         o.binding.isolate_devices = true;
         o.binding.bind_to = BindTo::kCore;
         o.host_devices = {{"a", "", 0, {0, 1, 2, 3}}};
       },
       {},
       [](const Specs& s) {
         for (const auto& spec : s) {
           EXPECT_EQ(spec.binding.devices_per_rank, 2);
           EXPECT_TRUE(spec.binding.isolate_devices);
           EXPECT_EQ(spec.binding.bind_to, BindTo::kCore);
         }
       }},
      {"horovod: every host hears that the ranks are Horovod's (horovodrun)",
       [](JobOptions& o) { o.horovod = true; },
       {},
       [](const Specs& s) {
         EXPECT_TRUE(s[0].horovod);
         EXPECT_TRUE(s[1].horovod);
       }},
      {"horovod: not said of a ferryrun job",
       [](JobOptions&) {},
       {},
       [](const Specs& s) {
         EXPECT_FALSE(s[0].horovod);
         EXPECT_FALSE(s[1].horovod);
       }},
      {"stdin: only the stdin rank's host gets it",
       [](JobOptions& o) { o.stdin_rank = 3; },
       {},
       [](const Specs& s) {
         EXPECT_EQ(s[0].stdin_rank, -1);
         EXPECT_EQ(s[1].stdin_rank, 3);
       }},
      {"stdin: none",
       [](JobOptions& o) { o.stdin_rank = -1; },
       {},
       [](const Specs& s) {
         EXPECT_EQ(s[0].stdin_rank, -1);
         EXPECT_EQ(s[1].stdin_rank, -1);
       }},
      {"wdir: a remote host without an explicit wdir falls back to $HOME",
       [](JobOptions&) {},
       {true, false},
       [](const Specs& s) {
         EXPECT_EQ(s[0].wdir, "/home/me/run");
         EXPECT_FALSE(s[0].wdir_fallback);  // this machine has ferryrun's own directory
         EXPECT_TRUE(s[1].wdir_fallback);
       }},
      {"wdir: an explicit wdir never falls back",
       [](JobOptions& o) { o.wdir_explicit = true; },
       {true, false},
       [](const Specs& s) {
         EXPECT_FALSE(s[0].wdir_fallback);
         EXPECT_FALSE(s[1].wdir_fallback);
       }},
      {"heartbeat: seconds become milliseconds; 0 is off",
       [](JobOptions& o) { o.heartbeat_s = 3; },
       {},
       [](const Specs& s) {
         EXPECT_EQ(s[0].heartbeat_ms, 3000u);
         EXPECT_EQ(s[1].heartbeat_ms, 3000u);
       }},
      {"heartbeat: off by default",
       [](JobOptions&) {},
       {},
       [](const Specs& s) { EXPECT_EQ(s[0].heartbeat_ms, 0u); }},
      {"torch: --local-rank=N per rank with torch_local_rank_arg",
       [](JobOptions& o) { o.torch_local_rank_arg = true; },
       {},
       [](const Specs& s) {
         ASSERT_EQ(s[1].ranks.size(), 2u);
         EXPECT_EQ(s[1].ranks[0].rank, 2);
         EXPECT_EQ(s[1].ranks[0].extra_args, std::vector<std::string>{"--local-rank=0"});
         EXPECT_EQ(s[1].ranks[1].extra_args, std::vector<std::string>{"--local-rank=1"});
         EXPECT_EQ(s[1].argv, (std::vector<std::string>{"python3", "train.py"}));
       }},
      {"expand_args: the program alone is shared, each rank's arguments are its own",
       [](JobOptions& o) {
         o.expand_args = true;
         o.torch_local_rank_arg = true;
         o.torch_local_rank_underscore = true;
         o.command = {"python3", "train.py", "--gpu={local_rank}", "--r={rank}/{world_size}"};
       },
       {},
       [](const Specs& s) {
         EXPECT_EQ(s[1].argv, std::vector<std::string>{"python3"});
         EXPECT_EQ(s[1].ranks[1].extra_args,
                   (std::vector<std::string>{"train.py", "--gpu=1", "--r=3/4", "--local_rank=1"}));
       }},
      {"torch: no extra arguments by default",
       [](JobOptions&) {},
       {},
       [](const Specs& s) { EXPECT_TRUE(s[0].ranks[0].extra_args.empty()); }},
      {"kill grace and verbose",
       [](JobOptions& o) { o.verbose = true; },
       {},
       [](const Specs& s) {
         EXPECT_EQ(s[0].kill_grace_ms, 2500u);
         EXPECT_TRUE(s[0].verbose);
       }},
      {"shared: job id, secret, PMI, the shared environment then the host's",
       [](JobOptions&) {},
       {},
       [](const Specs& s) {
         for (const auto& spec : s) {
           EXPECT_EQ(spec.job_id, "00000000000000ab");
           EXPECT_EQ(spec.secret, "s3cret");
           EXPECT_TRUE(spec.pmi);
           EXPECT_EQ(spec.world_size, 4);
           EXPECT_EQ(spec.pmi_process_mapping, "(vector,(0,2,2))");
           EXPECT_EQ(spec.env,
                     (std::vector<std::string>{"WORLD_SIZE=4", "NCCL_SOCKET_IFNAME=eth0"}));
         }
       }},
      {"ranks: each host its own, with its own variables",
       [](JobOptions&) {},
       {},
       [](const Specs& s) {
         ASSERT_EQ(s[0].ranks.size(), 2u);
         EXPECT_EQ(s[0].ranks[1].rank, 1);
         const auto& env = s[1].ranks[1].env;
         EXPECT_NE(std::find(env.begin(), env.end(), "RANK=3"), env.end());
         EXPECT_NE(std::find(env.begin(), env.end(), "LOCAL_RANK=1"), env.end());
       }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    JobOptions o = base_options();
    c.set(o);
    Built b = build(o, c.local);
    ASSERT_EQ(b.specs.size(), 2u);
    c.check(b.specs);
  }
}

TEST(MakeHostSpec, AnMpmdRankGetsItsPartsCommandDirectoryAndVariables) {
  JobOptions o = base_options();
  o.exports = {"K=job"};
  AppSpec first;
  first.command = {"./controller", "--x"};
  first.np = 1;
  first.where = "part 1";
  AppSpec second;
  second.command = {"./worker", "{rank}"};
  second.np = 3;
  second.exports = {"K=part", "RANK=99"};
  second.wdir = "/w";
  second.where = "part 2";
  o.apps = {first, second};
  o.command = first.command;
  o.expand_args = true;
  const Built b = build(o);
  ASSERT_EQ(b.specs.size(), 2u);
  const auto& r0 = b.specs[0].ranks[0];
  EXPECT_EQ(r0.argv, (std::vector<std::string>{"./controller"}));  // expanded args follow
  EXPECT_EQ(r0.extra_args, (std::vector<std::string>{"--x"}));
  EXPECT_EQ(r0.app, 0u);
  EXPECT_EQ(r0.wdir, "");
  const auto& r1 = b.specs[0].ranks[1];
  EXPECT_EQ(r1.argv, (std::vector<std::string>{"./worker"}));
  EXPECT_EQ(r1.extra_args, (std::vector<std::string>{"1"}));
  EXPECT_EQ(r1.app, 1u);
  EXPECT_EQ(r1.wdir, "/w");
  // The part's variables come first: the rank's own RANK is applied after them and wins.
  ASSERT_GE(r1.env.size(), 2u);
  EXPECT_EQ(r1.env[0], "K=part");
  EXPECT_NE(std::find(r1.env.begin(), r1.env.end(), "RANK=1"), r1.env.end());
  EXPECT_GT(std::find(r1.env.begin(), r1.env.end(), "RANK=1"),
            std::find(r1.env.begin(), r1.env.end(), "RANK=99"));
  EXPECT_EQ(b.specs[1].app_sizes, (std::vector<uint32_t>{1, 3}));
  EXPECT_EQ(b.specs[1].ranks[1].rank, 3);
  EXPECT_EQ(b.specs[1].ranks[1].app, 1u);
}

TEST(MakeHostSpec, OneProgramLeavesTheRanksArgvToTheSpec) {
  const Built b = build(base_options());
  for (const auto& spec : b.specs) {
    EXPECT_TRUE(spec.app_sizes.empty());
    for (const auto& r : spec.ranks) {
      EXPECT_TRUE(r.argv.empty());
      EXPECT_EQ(r.app, 0u);
    }
  }
}

TEST(MakeHostSpec, PmixFactsAreTheSharedOnesWithTheHostsOwnIndex) {
  const Built b = build(base_options());
  ASSERT_EQ(b.specs.size(), 2u);
  for (uint32_t i = 0; i < 2; ++i) {
    EXPECT_EQ(b.specs[i].node_names, (std::vector<std::string>{"node-a", "node-b"}));
    EXPECT_EQ(b.specs[i].node_of_rank, (std::vector<uint32_t>{0, 0, 1, 1}));
    EXPECT_EQ(b.specs[i].node_index, i);
    EXPECT_TRUE(b.specs[i].pmi);
  }
}

TEST(MakeHostSpec, NoPmiTurnsBothMpiRendezvousOff) {
  JobOptions o = base_options();
  o.no_pmi = true;
  const Built b = build(o);
  for (const auto& s : b.specs) EXPECT_FALSE(s.pmi);
}

TEST(MakeHostSpec, DevicesForHostIsTheLookupItself) {
  JobOptions o;
  o.binding.devices = {1};
  o.host_devices = {{"a", "root", 22, {0}}};
  EXPECT_EQ(devices_for_host(o, entry("a", 1, 22, "root")), std::vector<int>{0});
  EXPECT_EQ(devices_for_host(o, entry("a", 1, 22)), std::vector<int>{1});
  EXPECT_EQ(devices_for_host(o, entry("a", 1, 2222, "root")), std::vector<int>{1});
  EXPECT_EQ(devices_for_host(o, entry("b", 1, 22, "root")), std::vector<int>{1});
}

TEST(MakeHostSpec, JobIdsAreSixteenHexDigitsAndDiffer) {
  const std::string a = new_job_id(), b = new_job_id();
  EXPECT_EQ(a.size(), 16u);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos) << a;
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace ferry
