// Environment entries and the /proc environ scanner, over a made-up proc tree.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "ferry/common/environ.hpp"

namespace ferry {
namespace {

namespace fs = std::filesystem;

using Entries = std::vector<std::string>;

TEST(CommonEnvEntry, NamesOnlyTheExactVariable) {
  EXPECT_EQ(env_entry_value("PATH=/bin", "PATH"), "/bin");
  EXPECT_EQ(env_entry_value("PATH=", "PATH"), "");
  EXPECT_EQ(env_entry_value("A==b", "A"), "=b");
  EXPECT_FALSE(env_entry_value("PATHS=/bin", "PATH"));
  EXPECT_FALSE(env_entry_value("PATH", "PATH"));
  EXPECT_FALSE(env_entry_value("XPATH=/bin", "PATH"));
  EXPECT_FALSE(env_entry_value("=x", ""));
}

TEST(CommonEnvEntry, LastEntryWins) {
  const Entries env{"A=1", "B=2", "A=3"};
  EXPECT_EQ(env_value(env, "A"), "3");
  EXPECT_EQ(env_value(env, "B"), "2");
  EXPECT_FALSE(env_value(env, "C"));
  EXPECT_FALSE(env_value({}, "A"));
}

TEST(CommonEnvEntry, SplitsNulSeparatedBlocks) {
  EXPECT_EQ(split_environ(std::string("A=1\0B=2\0", 8)), (Entries{"A=1", "B=2"}));
  EXPECT_EQ(split_environ(std::string("A=1\0\0B=2", 8)), (Entries{"A=1", "B=2"}));
  EXPECT_EQ(split_environ(""), Entries{});
  EXPECT_EQ(split_environ(std::string("\0", 1)), Entries{});
}

TEST(CommonProcPid, OnlyPositiveDecimalNames) {
  EXPECT_EQ(parse_pid("1"), 1);
  EXPECT_EQ(parse_pid("4194304"), 4194304);
  EXPECT_EQ(parse_pid("2147483647"), 2147483647);
  for (const char* bad : {"", "0", "-1", "+1", "self", "12a", "01", "2147483648", " 1"})
    EXPECT_FALSE(parse_pid(bad)) << bad;
}

// A fake /proc: numbered directories with environ files, plus entries that are not pids.
class CommonFakeProc : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ferry-common-proc-XXXXXX";
    ASSERT_TRUE(::mkdtemp(tmpl));
    root_ = tmpl;
    fs::create_directories(root_ / "self");
    fs::create_directories(root_ / "net");
    std::ofstream(root_ / "uptime") << "1.0 1.0\n";
  }
  void TearDown() override {
    fs::permissions(root_, fs::perms::owner_all, fs::perm_options::add);
    fs::remove_all(root_);
  }
  void process(int pid, const std::string& environ) {
    fs::create_directories(root_ / std::to_string(pid));
    std::ofstream(root_ / std::to_string(pid) / "environ", std::ios::binary) << environ;
  }
  std::string root() const { return root_.string(); }

  fs::path root_;
};

// /proc/PID/stat: the name may hold spaces and parentheses, so the fields start after the
// last ')'.
TEST(CommonProcStat, FieldsCountFromTheLastParenthesis) {
  const std::string text =
      "4711 (a (b) c) S 1 4711 4711 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 2 0 12345 1000 55\n";
  const auto f = stat_fields(text);
  ASSERT_EQ(f.size(), 22U);
  EXPECT_EQ(f[0], "S");
  EXPECT_EQ(f[1], "1");
  EXPECT_EQ(f[2], "4711");
  EXPECT_EQ(f[11], "7");
  EXPECT_EQ(f[12], "3");
  EXPECT_EQ(f[17], "2");
  EXPECT_EQ(f[19], "12345");
  EXPECT_EQ(f[21], "55") << "the newline is not part of the last field";
  EXPECT_EQ(stat_fields("12 (z) Z").size(), 1U);
  EXPECT_TRUE(stat_fields("12 no name S 1").empty());
  EXPECT_TRUE(stat_fields("").empty());
  EXPECT_TRUE(stat_fields("12 (x)").empty());
}

TEST_F(CommonFakeProc, ListsOnlyPidEntries) {
  process(7, "");
  process(42, "");
  auto pids = list_pids(root());
  ASSERT_TRUE(pids) << pids.error().message;
  std::sort(pids->begin(), pids->end());
  EXPECT_EQ(*pids, (std::vector<pid_t>{7, 42}));
}

TEST_F(CommonFakeProc, ReadsOneEnvironment) {
  process(10, std::string("A=1\0FERRY_JOB_SECRET=s\0", 23));
  auto env = read_environ(10, root());
  ASSERT_TRUE(env) << env.error().message;
  EXPECT_EQ(*env, (Entries{"A=1", "FERRY_JOB_SECRET=s"}));
  auto gone = read_environ(11, root());
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().message, root() + "/11/environ: cannot read: No such file or directory");
}

TEST_F(CommonFakeProc, VisitsReadableProcessesUntilToldToStop) {
  process(1, std::string("TAG=a\0", 6));
  process(2, std::string("TAG=b\0", 6));
  process(3, std::string("TAG=a\0X=1\0", 10));
  fs::create_directories(root_ / "4");  // a process that is gone: no environ
  std::map<pid_t, Entries> seen;
  for_each_environ(root(), [&](pid_t pid, const Entries& env) {
    seen[pid] = env;
    return true;
  });
  EXPECT_EQ(seen,
            (std::map<pid_t, Entries>{{1, {"TAG=a"}}, {2, {"TAG=b"}}, {3, {"TAG=a", "X=1"}}}));

  int visits = 0;
  for_each_environ(root(), [&](pid_t, const Entries&) { return ++visits < 2; });
  EXPECT_EQ(visits, 2);
}

TEST_F(CommonFakeProc, AMissingRootIsAnErrorOrNothingToVisit) {
  auto pids = list_pids(root() + "/missing");
  ASSERT_FALSE(pids);
  EXPECT_EQ(pids.error().message, root() + "/missing: cannot list: No such file or directory");
  bool visited = false;
  for_each_environ(root() + "/missing", [&](pid_t, const Entries&) { return visited = true; });
  EXPECT_FALSE(visited);
}

TEST_F(CommonFakeProc, ListsTheChildrenOfEveryThread) {
  fs::create_directories(root_ / "5/task/5");
  fs::create_directories(root_ / "5/task/9");
  fs::create_directories(root_ / "5/task/self");  // not a thread: skipped
  std::ofstream(root_ / "5/task/5/children") << "6 7 ";
  std::ofstream(root_ / "5/task/9/children") << "8\n";
  std::ofstream(root_ / "5/task/self/children") << "99 ";
  EXPECT_TRUE(has_children_lists(5, root()));
  std::vector<pid_t> children{1};  // appended to
  list_children(5, children, root());
  std::sort(children.begin(), children.end());
  EXPECT_EQ(children, (std::vector<pid_t>{1, 6, 7, 8}));

  std::vector<pid_t> none;
  list_children(6, none, root());  // gone
  EXPECT_TRUE(none.empty());
  fs::create_directories(root_ / "6/task/6");  // a kernel without the lists
  EXPECT_FALSE(has_children_lists(6, root()));
}

}  // namespace
}  // namespace ferry
