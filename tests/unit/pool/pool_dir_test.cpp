// Where pools live and how a job names its hosts there: keys with the user and port the job
// would use, names checked, the pools' directory private, pools listed from their host files.
#include "ferry/pool/pool_dir.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace ferry {
namespace {

std::string fresh_dir(const std::string& name) {
  std::string dir = ::testing::TempDir() + "pool-" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(PoolDir, AHostsKeyHasTheUserAndPortTheJobWouldUse) {
  HostEntry h;
  h.name = "node1";
  EXPECT_EQ(pool_host_key(h, 0, ""), "node1");
  EXPECT_EQ(pool_host_key(h, 2222, ""), "node1:2222");
  EXPECT_EQ(pool_host_key(h, 2222, "alice"), "alice@node1:2222");
  h.port = 2300;
  h.user = "bob";
  EXPECT_EQ(pool_host_key(h, 2222, "alice"), "bob@node1:2300") << "the entry's own win";
  h = HostEntry{};
  h.name = "fe80::1";
  EXPECT_EQ(pool_host_key(h, 22, ""), "[fe80::1]:22");
}

TEST(PoolDir, NamesAreChecked) {
  for (const char* ok : {"default", "a", "sweep-2.b_c"})
    EXPECT_TRUE(check_pool_name(ok).ok()) << ok;
  for (const std::string& bad :
       std::vector<std::string>{"", ".hidden", "a/b", "a b", std::string(65, 'x')}) {
    auto st = check_pool_name(bad);
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_NE(st.error().message.find("bad pool name"), std::string::npos);
  }
}

TEST(PoolDir, ThePoolsDirectoryIsPrivate) {
  const std::string home = fresh_dir("home");
  auto dir = pools_directory(home, "");
  ASSERT_TRUE(dir.ok()) << dir.error().message;
  EXPECT_EQ(*dir, home + "/.local/state/ferry/pools");
  struct stat st {};
  ASSERT_EQ(::stat(dir->c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700U);
  const std::string xdg = fresh_dir("xdg");
  auto in_xdg = pools_directory(home, xdg);
  ASSERT_TRUE(in_xdg.ok());
  EXPECT_EQ(*in_xdg, xdg + "/ferry/pools");
  EXPECT_FALSE(pools_directory("", "").ok());
  if (::geteuid() == 0) {  // another user's directory is refused, never used
    const std::string theirs = fresh_dir("theirs");
    std::filesystem::create_directories(theirs + "/ferry/pools");
    ASSERT_EQ(::chown((theirs + "/ferry/pools").c_str(), 65534, 65534), 0);
    auto refused = pools_directory(home, theirs);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().message.find("owned by uid 65534"), std::string::npos)
        << refused.error().message;
  }
}

// A job looks for pools in every run: looking must create nothing in the user's home.
TEST(PoolDir, LookingForPoolsCreatesNothing) {
  const std::string home = fresh_dir("look");
  const char* old_home = std::getenv("HOME");
  const char* old_xdg = std::getenv("XDG_STATE_HOME");
  const std::string saved_home = old_home ? old_home : "";
  const std::string saved_xdg = old_xdg ? old_xdg : "";
  ::setenv("HOME", (home + "/absent").c_str(), 1);
  ::unsetenv("XDG_STATE_HOME");
  auto none = existing_pools_directory();
  ASSERT_TRUE(none.ok()) << none.error().message;
  EXPECT_FALSE(none->has_value());
  EXPECT_FALSE(std::filesystem::exists(home + "/absent")) << "nothing made";
  ASSERT_TRUE(pools_directory().ok());
  auto some = existing_pools_directory();
  ASSERT_TRUE(some.ok() && some->has_value());
  EXPECT_EQ(**some, home + "/absent/.local/state/ferry/pools");
  ::setenv("HOME", saved_home.c_str(), 1);
  if (old_xdg) ::setenv("XDG_STATE_HOME", saved_xdg.c_str(), 1);
}

TEST(PoolDir, PoolsAreListedWithTheirHosts) {
  const std::string dir = fresh_dir("list");
  std::filesystem::create_directories(dir + "/b");
  std::filesystem::create_directories(dir + "/a");
  std::filesystem::create_directories(dir + "/.tmp");
  std::ofstream(dir + "/a/hosts") << "node1:2222\n\n node2:2222 \n";
  auto pools = list_pools(dir);
  ASSERT_EQ(pools.size(), 2U);
  EXPECT_EQ(pools[0].name, "a");
  EXPECT_EQ(pools[0].keys, (std::vector<std::string>{"node1:2222", "node2:2222"}));
  EXPECT_EQ(pools[1].name, "b");
  EXPECT_TRUE(pools[1].keys.empty());
  auto none = connect_pool(dir + "/a");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("no pool answers at " + dir + "/a/pool.sock"),
            std::string::npos);
}

}  // namespace
}  // namespace ferry
