// The PMI-1 server's config as ferryd makes it from a host's spec.
#include <gtest/gtest.h>

#include "ferry/daemon/pmi_proxy.hpp"

namespace ferry {
namespace {

TEST(PmiHostConfigOf, TakesTheJobTheWorldAndEachRanksPart) {
  wire::HostSpec spec;
  spec.job_id = "f00d";
  spec.world_size = 4;
  spec.pmi_process_mapping = "(vector,(0,2,2))";
  wire::RankLaunch a;
  a.rank = 2;
  wire::RankLaunch b;
  b.rank = 3;
  b.app = 1;
  spec.ranks = {a, b};
  const PmiHostConfig c = pmi_host_config_of(spec);
  EXPECT_EQ(c.kvsname, "f00d");
  EXPECT_EQ(c.world_size, 4);
  EXPECT_EQ(c.universe_size, 4);
  EXPECT_EQ(c.process_mapping, "(vector,(0,2,2))");
  EXPECT_EQ(c.ranks, (std::vector<int>{2, 3}));
  EXPECT_EQ(c.appnums, (std::vector<int>{0, 1}));
  spec.universe_size = 6;  // the slots of the hosts that run ranks
  EXPECT_EQ(pmi_host_config_of(spec).universe_size, 6);
  spec.job_id.clear();
  EXPECT_EQ(pmi_host_config_of(spec).kvsname, "ferry");
}

}  // namespace
}  // namespace ferry
