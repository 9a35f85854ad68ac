// The elastic driver's first discovery: the discovery script's listing becomes the job's hosts
// and -np (a worker on every slot, up to --max-np), every name checked as a job file's host is.
#include "ferry/frontend/elastic_discovery.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

namespace ferry {
namespace {

class FirstDiscovery : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(::mkdtemp(dir_), nullptr);
    script_ = std::string(dir_) + "/discover.sh";
  }
  void TearDown() override {
    ::unlink(script_.c_str());
    ::rmdir(dir_);
  }
  // The script prints `listing`.
  void lists(const std::string& listing) {
    std::ofstream f(script_);
    f << "#!/bin/sh\nprintf '" << listing << "'\n";
    f.close();
    ::chmod(script_.c_str(), 0755);
  }
  JobOptions job(int np, int min_np, int max_np) const {
    JobOptions j;
    j.np = np;
    j.elastic.discovery_script = script_;
    j.elastic.slots_per_host = 3;
    j.elastic.min_np = min_np;
    j.elastic.max_np = max_np;
    j.elastic.timeout_s = 1;
    return j;
  }

  char dir_[64] = "/tmp/ferry-elastic-discovery.XXXXXX";
  std::string script_;
};

TEST_F(FirstDiscovery, TheListingGivesTheHostsAndAWorkerOnEverySlot) {
  lists("a:2\\nb\\n");
  JobOptions j = job(2, 2, 0);
  auto note = discover_first_hosts(j);
  ASSERT_TRUE(note) << note.error().message;
  EXPECT_EQ(*note, "elastic: the discovery script lists a:2,b:3");
  ASSERT_EQ(j.hosts.size(), 2u);
  EXPECT_EQ(j.hosts[0].name, "a");
  EXPECT_EQ(j.hosts[0].slots, 2);
  EXPECT_EQ(j.hosts[1].slots, 3);  // --slots-per-host
  EXPECT_EQ(j.hosts[0].origin, "--host-discovery-script");
  EXPECT_EQ(j.np, 5);  // -np is the floor, every slot found gets a worker

  JobOptions capped = job(2, 1, 3);
  ASSERT_TRUE(discover_first_hosts(capped));
  EXPECT_EQ(capped.np, 3);  // --max-np
}

TEST_F(FirstDiscovery, TooFewSlotsWithinTheTimeoutIsOneLine) {
  lists("a:2\\nb\\n");
  JobOptions j = job(9, 9, 0);
  std::vector<std::string> told;
  auto r = discover_first_hosts(j, [&told](const std::string& line) { told.push_back(line); });
  ASSERT_FALSE(r);
  // One line while it waits (the count did not change), then the error.
  ASSERT_EQ(told.size(), 1u);
  EXPECT_EQ(told[0],
            "the discovery script lists 5 of the 9 slots the job needs; waiting up to 1 s "
            "(--elastic-timeout)");
  EXPECT_EQ(r.error().message,
            "timed out after 1 s waiting for the discovery script to list 9 slots (it lists 5; "
            "--elastic-timeout, --min-np, -np)");
  EXPECT_TRUE(j.hosts.empty());
}

TEST_F(FirstDiscovery, ANameThatCannotBeAHostIsTheScriptsError) {
  lists("a:2\\n-oProxyCommand=x:2\\n");
  JobOptions j = job(2, 2, 0);
  auto r = discover_first_hosts(j);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message.rfind("--host-discovery-script " + script_ +
                                        ": bad host name "
                                        "'-oProxyCommand=x'",
                                    0),
            0U)
      << r.error().message;
  EXPECT_TRUE(j.hosts.empty());
  // The later listings are read the same way: the driver warns and asks again.
  ElasticOptions e;
  EXPECT_FALSE(read_discovery_listing("a\n-oProxyCommand=x\n", e));
  auto ok = read_discovery_listing("a\nb:4\n", e);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->size(), 2u);
}

TEST_F(FirstDiscovery, AScriptThatFailsAtOnceIsAnError) {
  JobOptions j = job(2, 2, 0);
  j.elastic.discovery_script = std::string(dir_) + "/absent.sh";
  auto r = discover_first_hosts(j);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message.rfind("--host-discovery-script: ", 0), 0U) << r.error().message;
}

}  // namespace
}  // namespace ferry
