// PmixStart: ferryrun tells each host to start its PMIx server as soon as the host's PMIx name
// is known (before its HostSpec), with the name that HostSpec's node list will give it; hosts
// without ranks, and jobs whose ranks get no PMIx, are not told. Daemons played in-process.
#include <gtest/gtest.h>

#include <algorithm>

#include "fake_daemon.hpp"
#include "ferry/rendezvous/pmix_job.hpp"

namespace ferry {
namespace {

using test_support::run_with_fake_daemons;

// Two hosts whose ferryds say the same hostname "a" (two SSH ports of one machine, or two
// containers), one "b" and one "c" that gets no rank.
JobOptions four_hosts() {
  JobOptions o;
  for (auto [name, port, slots] : {std::tuple{"a", 0, 2}, std::tuple{"b", 0, 2},
                                   std::tuple{"a", 2222, 1}, std::tuple{"c", 0, 1}}) {
    HostEntry h;
    h.name = name;
    h.port = port;
    h.slots = slots;
    o.hosts.push_back(h);
  }
  o.np = 5;
  o.command = {"app"};
  o.wdir = "/tmp";
  return o;
}

TEST(JobPmixStart, EveryHostWithRanksIsToldItsPmixNameBeforeItsSpec) {
  auto r = run_with_fake_daemons(four_hosts());
  ASSERT_EQ(r.status, 0) << r.diag;
  std::vector<std::string> starts = r.pmix_starts;
  std::sort(starts.begin(), starts.end());
  EXPECT_EQ(starts, (std::vector<std::string>{"a:0 as a", "a:2222 as a#2", "b:0 as b"}));
  // The name each host was told is the one its HostSpec's node list gives it.
  ASSERT_EQ(r.specs.size(), 3u);  // c, with no rank, is not opened
  for (const auto& s : r.specs) {
    if (s.spec.ranks.empty()) continue;
    const std::string told = s.host.name + ":" + std::to_string(s.host.port) + " as " +
                             pmix_node_names(s.spec.node_names).at(s.spec.node_index);
    EXPECT_NE(std::find(starts.begin(), starts.end(), told), starts.end()) << told;
  }
}

TEST(JobPmixStart, NoPmiTellsNoHost) {
  JobOptions o = four_hosts();
  o.no_pmi = true;
  auto r = run_with_fake_daemons(o);
  ASSERT_EQ(r.status, 0) << r.diag;
  EXPECT_TRUE(r.pmix_starts.empty());
}

}  // namespace
}  // namespace ferry
