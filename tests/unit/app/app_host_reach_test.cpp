// How hosts are reached once the command line or job file is read: the global -p/-l and
// the job file's [defaults] port/user never make a host on this machine SSH; an entry's own
// port or user does.
#include <gtest/gtest.h>

#include "ferry/cli/ferryrun_cli.hpp"
#include "ferry/cli/job_file.hpp"
#include "ferry/frontend/host_reach.hpp"

namespace ferry {
namespace {

TEST(AppHostReach, GlobalPortAndUserOnTheCommandLineLeaveLocalHostsLocal) {
  auto r = parse_ferryrun_args(
      {"ferryrun", "-p", "2201", "-l", "root", "-H", "localhost:2,127.0.0.1,root@::1", "true"});
  ASSERT_TRUE(r.config.has_value());
  const HostList& hosts = r.config->job.hosts;
  ASSERT_EQ(hosts.size(), 3u);
  SshDefaults global{r.config->ssh.port, r.config->ssh.user};
  EXPECT_EQ(global.port, 2201);
  EXPECT_EQ(hosts[0].port, 0);  // -p is not folded into the entries
  EXPECT_TRUE(decide_host_reach(hosts[0], global).local);
  EXPECT_TRUE(decide_host_reach(hosts[1], global).local);
  EXPECT_FALSE(decide_host_reach(hosts[2], global).local);  // user@ is the entry's own
}

TEST(AppHostReach, JobFileHostPortIsOwnAndDefaultsPortIsGlobal) {
  auto f = parse_job_file_text(
      "[defaults]\nport = 2222\nuser = \"bob\"\n"
      "[[hosts]]\nname = \"localhost\"\n"
      "[[hosts]]\nname = \"127.0.0.1\"\nport = 2201\n"
      "[[hosts]]\nname = \"127.0.0.1\"\nuser = \"root\"\n",
      "job.toml", FrontendConfig{});
  ASSERT_TRUE(f.ok()) << f.error().message;
  const HostList& hosts = f->config.job.hosts;
  ASSERT_EQ(hosts.size(), 3u);
  SshDefaults global{f->config.ssh.port, f->config.ssh.user};
  EXPECT_EQ(global.port, 2222);
  EXPECT_TRUE(decide_host_reach(hosts[0], global).local);
  EXPECT_FALSE(decide_host_reach(hosts[1], global).local);
  EXPECT_FALSE(decide_host_reach(hosts[2], global).local);
}

}  // namespace
}  // namespace ferry
