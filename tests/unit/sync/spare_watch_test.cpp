// A pool host's watch over its spares: a kept spare is untouched once its stamps were checked
// with the watch on, and any change after that (a write, also through a hard link from
// outside, a file opened for writing, a name added deep down) is seen at once; a spare changed
// before the watch began never is; a spare taken on the watch's word and kept unchanged is not
// checked again, one changed while its job had it is; one watch serves a cache; without one a
// ferryd hears nothing and checks the stamps itself; a host that shares the network namespace
// but sees other files at the cache's path (a container with the host's network) never gets
// the word of another's watch, and its own watch serves it. (The checks
// run at normal priority here: on a machine busy with other tests, a thread that runs only
// when a CPU is idle may not run for seconds.)
#include "ferry/sync/spare_watch.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "ferry/sync/file_cache.hpp"
#include "ferry/sync/tree.hpp"
#include "ferry/transport/content_hash.hpp"

namespace ferry {
namespace {

namespace fs = std::filesystem;

struct SpareWatchTest : ::testing::Test {
  void SetUp() override {
    base = ::testing::TempDir() + "spare-watch-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    if (fs::exists(base)) FileCache::remove_copy(base);
    auto c = FileCache::open(base);
    ASSERT_TRUE(c.ok()) << c.error().message;
    cache.emplace(std::move(*c));
    add_dir("data");
    add_file("data/x.bin", std::string(5000, 'x'));
    add_file("run.py", "print(1)\n");
    digest = *tree_digest(entries);
  }
  void TearDown() override {
    cache.reset();
    if (fs::exists(base)) FileCache::remove_copy(base);
  }
  void add_dir(const std::string& path) {
    TreeEntry e;
    e.path = path;
    e.kind = TreeEntry::Kind::kDirectory;
    e.mode = 0755;
    entries.push_back(e);
  }
  void add_file(const std::string& path, const std::string& bytes) {
    TreeEntry e;
    e.path = path;
    e.mode = 0644;
    e.size = bytes.size();
    e.hash = *bytes_sha256(bytes);
    ASSERT_TRUE(cache->receive(e.hash, bytes, true).ok());
    entries.push_back(e);
  }
  // A job's copy made, stamped and kept, as ferryd does: the spare's name.
  std::string keep(const std::string& job) {
    auto made = cache->materialize(entries, job);
    EXPECT_TRUE(made.ok());
    if (!made.ok()) return "";
    cache->keep_spare(*made, digest, FileCache::stamp_copy(*made, entries));
    for (const auto& f : fs::directory_iterator(base + "/spares"))
      if (f.is_directory() && !taken.contains(f.path().filename().string()))
        return f.path().filename().string();
    return "";
  }
  // A taken spare kept again when its job ends, as ferryd does: its new name.
  std::string keep_again(const FileCache::SpareCopy& got) {
    std::set<std::string> before;
    for (const auto& f : fs::directory_iterator(base + "/spares"))
      if (f.is_directory()) before.insert(f.path().filename().string());
    cache->keep_spare(got.path, digest, got.stamps, got.stamps_file);
    for (const auto& f : fs::directory_iterator(base + "/spares"))
      if (f.is_directory() && !before.contains(f.path().filename().string()))
        return f.path().filename().string();
    return "";
  }
  // Whether the watch says `name` untouched within `ms`.
  bool untouched_within(const std::string& name, int ms) {
    for (int i = 0; i < ms / 10; ++i) {
      if (spare_watch_untouched(base, name)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  std::string spare(const std::string& name) const { return base + "/spares/" + name; }

  std::string base;
  std::optional<FileCache> cache;
  std::vector<TreeEntry> entries;
  std::string digest;
  std::set<std::string> taken;
};

TEST_F(SpareWatchTest, AKeptSpareIsUntouchedOnceCheckedAndTakenOnItsWord) {
  const SpareWatch watch(base, SpareWatch::Checks::kNow);
  ASSERT_TRUE(watch.serving());
  const std::string name = keep("1-a");
  ASSERT_FALSE(name.empty());
  ASSERT_TRUE(untouched_within(name, 5000));
  auto got = cache->take_untouched_spare(digest, "2-b");
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(got->watched);
  EXPECT_EQ(got->path, base + "/jobs/2-b");
  // Its stamps not read: their file set aside, to be kept again with it.
  EXPECT_TRUE(got->stamps.empty());
  std::ifstream stamps(got->stamps_file);
  std::string line;
  size_t lines = 0;
  while (std::getline(stamps, line)) ++lines;
  EXPECT_EQ(lines, entries.size());
  // Taken: the watch forgets it.
  EXPECT_FALSE(spare_watch_untouched(base, name));
}

TEST_F(SpareWatchTest, AWriteAfterTheCheckIsSeenAtOnce) {
  const SpareWatch watch(base, SpareWatch::Checks::kNow);
  const std::string name = keep("1-a");
  ASSERT_TRUE(untouched_within(name, 5000));
  {
    // The same size, written in place.
    const int fd = ::open((spare(name) + "/data/x.bin").c_str(), O_WRONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::pwrite(fd, "y", 1, 10), 1);
    ::close(fd);
  }
  EXPECT_FALSE(spare_watch_untouched(base, name));
  // The ferryd checks the stamps itself, and they tell the write too.
  EXPECT_FALSE(cache->take_untouched_spare(digest, "2-b").has_value());
}

TEST_F(SpareWatchTest, AFileOpenedForWritingCountsAsChangedAndTheStampsDecide) {
  const SpareWatch watch(base, SpareWatch::Checks::kNow);
  const std::string name = keep("1-a");
  ASSERT_TRUE(untouched_within(name, 5000));
  // Opened for writing and closed, nothing written: a write through a mapping would look the
  // same to inotify, so the watch no longer vouches for it...
  const int fd = ::open((spare(name) + "/run.py").c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ::close(fd);
  EXPECT_FALSE(spare_watch_untouched(base, name));
  // ... and the ferryd's own check of the stamps finds it as kept.
  auto got = cache->take_untouched_spare(digest, "2-b");
  ASSERT_TRUE(got.has_value());
  EXPECT_FALSE(got->watched);
}

TEST_F(SpareWatchTest, ANameAddedDeepDownIsSeen) {
  const SpareWatch watch(base, SpareWatch::Checks::kNow);
  const std::string name = keep("1-a");
  ASSERT_TRUE(untouched_within(name, 5000));
  std::ofstream(spare(name) + "/data/new.txt") << "x";
  EXPECT_FALSE(spare_watch_untouched(base, name));
}

TEST_F(SpareWatchTest, ASpareChangedBeforeTheWatchBeganIsNeverUntouched) {
  const std::string name = keep("1-a");
  std::ofstream(spare(name) + "/run.py", std::ios::app) << "# changed\n";
  const SpareWatch watch(base, SpareWatch::Checks::kNow);  // finds the spare kept, and checks it
  EXPECT_FALSE(untouched_within(name, 500));
  // A spare kept now, with the watch on, is checked and untouched.
  taken.insert(name);
  const std::string second = keep("2-b");
  ASSERT_NE(second, name);
  EXPECT_TRUE(untouched_within(second, 5000));
  // The newest spare the watch vouches for is the one taken.
  auto got = cache->take_untouched_spare(digest, "3-c");
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(got->watched);
  EXPECT_FALSE(fs::exists(spare(second)));
  EXPECT_TRUE(fs::exists(spare(name)));
}

TEST_F(SpareWatchTest, ASpareTakenOnItsWordAndKeptUnchangedIsNotCheckedAgain) {
  const SpareWatch watch(base, SpareWatch::Checks::kNow);
  const std::string name = keep("1-a");
  ASSERT_TRUE(untouched_within(name, 5000));
  EXPECT_EQ(watch.checks_run(), 1U);
  for (int job = 2; job < 5; ++job) {
    auto got = cache->take_untouched_spare(digest, std::to_string(job) + "-b");
    ASSERT_TRUE(got.has_value());
    EXPECT_TRUE(got->watched) << "job " << job;
    // The job's ranks read their files, as ranks do: no change.
    std::ifstream(got->path + "/data/x.bin").get();
    const std::string again = keep_again(*got);
    ASSERT_FALSE(again.empty());
    EXPECT_TRUE(spare_watch_untouched(base, again)) << "job " << job;
  }
  EXPECT_EQ(watch.checks_run(), 1U);
}

TEST_F(SpareWatchTest, ASpareChangedWhileItsJobHadItIsCheckedAgain) {
  const SpareWatch watch(base, SpareWatch::Checks::kNow);
  const std::string name = keep("1-a");
  ASSERT_TRUE(untouched_within(name, 5000));
  auto got = cache->take_untouched_spare(digest, "2-b");
  ASSERT_TRUE(got.has_value());
  ASSERT_TRUE(got->watched);
  // A rank links a file of its copy from outside it and writes through that name: the copy's
  // directories see nothing, the file's own watch does.
  const std::string outside = base + "/outside-link";
  ASSERT_EQ(::link((got->path + "/run.py").c_str(), outside.c_str()), 0);
  std::ofstream(outside, std::ios::app) << "# changed\n";
  ASSERT_EQ(::unlink(outside.c_str()), 0);
  const std::string again = keep_again(*got);
  ASSERT_FALSE(again.empty());
  // Checked again, and its stamps tell the change.
  for (int i = 0; i < 500 && watch.checks_run() < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(watch.checks_run(), 2U);
  EXPECT_FALSE(spare_watch_untouched(base, again));
  EXPECT_FALSE(cache->take_untouched_spare(digest, "3-c").has_value());
}

TEST_F(SpareWatchTest, AWriteThroughAHardLinkFromOutsideIsSeen) {
  // A file of the copy linked from outside before the copy was stamped and kept: its stamp
  // holds the link.
  auto made = cache->materialize(entries, "1-a");
  ASSERT_TRUE(made.ok());
  const std::string outside = base + "/outside-link";
  ASSERT_EQ(::link((*made + "/data/x.bin").c_str(), outside.c_str()), 0);
  cache->keep_spare(*made, digest, FileCache::stamp_copy(*made, entries));
  std::string name;
  for (const auto& f : fs::directory_iterator(base + "/spares"))
    if (f.is_directory()) name = f.path().filename().string();
  const SpareWatch watch(base, SpareWatch::Checks::kNow);
  ASSERT_TRUE(untouched_within(name, 5000));
  // Written in place through the other name, the same size: no directory of the spare sees it.
  const int fd = ::open(outside.c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, "y", 1, 10), 1);
  EXPECT_FALSE(spare_watch_untouched(base, name));
  ::close(fd);
}

TEST_F(SpareWatchTest, OneWatchServesACacheAndNoneMeansNoWord) {
  const std::string name = keep("1-a");
  EXPECT_FALSE(untouched_within(name, 50));  // no watch: no word, the stamps decide
  auto first = std::make_unique<SpareWatch>(base, SpareWatch::Checks::kNow);
  ASSERT_TRUE(first->serving());
  const SpareWatch second(base, SpareWatch::Checks::kNow);
  EXPECT_FALSE(second.serving());
  EXPECT_TRUE(untouched_within(name, 5000));
  first.reset();
  EXPECT_FALSE(spare_watch_untouched(base, name));
}

// Runs `ask` in a child process with a mount namespace of its own, where `onto` shows what is
// at `from` (a bind mount), as another host beside this one in its network namespace sees its
// own files at the same paths: the child's answer, or -1 where the namespace could not be
// made.
int in_other_files(const std::string& from, const std::string& onto,
                   const std::function<bool()>& ask) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::unshare(CLONE_NEWNS) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount(from.c_str(), onto.c_str(), nullptr, MS_BIND, nullptr) != 0)
      ::_exit(2);
    ::_exit(ask() ? 1 : 0);
  }
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status) == 2 ? -1 : WEXITSTATUS(status);
}

TEST_F(SpareWatchTest, AHostBesideThisOneWithItsOwnFilesGetsNoWordOfThisWatch) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (a mount namespace of its own)";
  // The other host's cache, at the same path in its view: the same tree kept under the same
  // spare name, but changed there since.
  const std::string name = keep("1-a");
  ASSERT_FALSE(name.empty());
  const std::string other = base + "-other";
  FileCache::remove_copy(other);
  fs::copy(base, other, fs::copy_options::recursive);
  std::ofstream(other + "/spares/" + name + "/run.py", std::ios::app) << "# changed\n";
  const SpareWatch watch(base, SpareWatch::Checks::kNow);
  ASSERT_TRUE(untouched_within(name, 5000));
  // The whole cache folder another: no word from this host's watch, and a watch of its own
  // there serves (it checks the spare, and finds the change).
  EXPECT_EQ(in_other_files(other, base, [&] { return spare_watch_untouched(base, name); }), 0);
  EXPECT_EQ(in_other_files(other, base,
                           [&] {
                             const SpareWatch own(base, SpareWatch::Checks::kNow);
                             return own.serving() && !untouched_within(name, 300);
                           }),
            1);
  // Only its spares folder another (the cache folder the same): no word either.
  EXPECT_EQ(in_other_files(other + "/spares", base + "/spares",
                           [&] { return spare_watch_untouched(base, name); }),
            0);
  // Here, the watch's word stands.
  EXPECT_TRUE(spare_watch_untouched(base, name));
  FileCache::remove_copy(other);
}

}  // namespace
}  // namespace ferry
