// A host's cache of synced files: what it lacks, a file received and checked, a damaged one
// asked for again, a job's copy built whole and private, and eviction.
#include "ferry/sync/file_cache.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "ferry/transport/content_hash.hpp"
#include "sync_test_files.hpp"

namespace ferry {
namespace {

namespace fs = std::filesystem;

using sync_test::dir;
using sync_test::file;
using sync_test::read;

std::string fresh(const std::string& name) { return sync_test::fresh("synccache", name); }

TEST(FileCache, AFileReceivedInPiecesIsCheckedAndKept) {
  auto c = FileCache::open(fresh("receive"));
  ASSERT_TRUE(c.ok()) << c.error().message;
  struct stat st {};
  ASSERT_EQ(::stat(c->base().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700U);
  const std::vector<TreeEntry> tree = {file("a", "hello world"), file("b", "hello world"),
                                       file("c", "other")};
  const auto want = c->missing(tree);
  ASSERT_EQ(want.size(), 2U);  // one per content
  EXPECT_EQ(want[0], tree[0].hash);
  ASSERT_TRUE(c->receive(want[0], "hello ", false).ok());
  ASSERT_TRUE(c->receive(want[0], "world", true).ok());
  // Bytes that do not match the name: refused, nothing kept.
  auto bad = c->receive(want[1], "not other", true);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("do not match"), std::string::npos);
  EXPECT_EQ(c->missing(tree), std::vector<std::string>{tree[2].hash});
  ASSERT_TRUE(c->receive(want[1], "other", true).ok());
  EXPECT_TRUE(c->missing(tree).empty());
  EXPECT_EQ(c->usage().files, 2U);
  EXPECT_EQ(c->usage().bytes, 16U);
  EXPECT_FALSE(c->receive("../../etc/x", "x", true).ok());
}

TEST(FileCache, ADamagedCachedFileIsAskedForAgain) {
  auto c = FileCache::open(fresh("damaged"));
  ASSERT_TRUE(c.ok());
  const std::vector<TreeEntry> tree = {file("a", "good bytes")};
  ASSERT_TRUE(c->receive(tree[0].hash, "good bytes", true).ok());
  const std::string cached = c->base() + "/files/" + tree[0].hash;
  ::chmod(cached.c_str(), 0600);
  std::ofstream(cached) << "evil bytes!";  // written: its stamp (size, mtime) changes
  EXPECT_EQ(c->missing(tree), std::vector<std::string>{tree[0].hash});
  EXPECT_FALSE(fs::exists(cached));
}

// The stamp a cached file was checked with: its attribute (no file of its own) where the
// filesystem takes one, else `.HASH.ok` beside it.
std::string stamp_kept(const FileCache& c, const std::string& hash) {
  const std::string cached = c.base() + "/files/" + hash;
  char buf[96];
  const ssize_t n = ::getxattr(cached.c_str(), "user.ferry.stamp", buf, sizeof buf);
  if (n > 0) {
    EXPECT_FALSE(fs::exists(c.base() + "/files/." + hash + ".ok")) << "no inode for the stamp";
    return std::string(buf, static_cast<size_t>(n));
  }
  return read(c.base() + "/files/." + hash + ".ok");
}

TEST(FileCache, AFileWhoseStampChangedIsCheckedAgainAndKeptWhenGood) {
  auto c = FileCache::open(fresh("stamp"));
  ASSERT_TRUE(c.ok());
  const std::vector<TreeEntry> tree = {file("a", "same bytes")};
  ASSERT_TRUE(c->receive(tree[0].hash, "same bytes", true).ok());
  const std::string before = stamp_kept(*c, tree[0].hash);
  ASSERT_FALSE(before.empty());
  // Touched (a new mtime), its bytes the same: read again, still good, stamped anew.
  const std::string cached = c->base() + "/files/" + tree[0].hash;
  const timespec later[2] = {{0, UTIME_OMIT}, {2000000000, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, cached.c_str(), later, 0), 0);
  EXPECT_TRUE(c->missing(tree).empty());
  EXPECT_NE(stamp_kept(*c, tree[0].hash), before);
  EXPECT_EQ(c->usage().files, 1U);  // a stamp is not a cached file
}

// Bytes changed behind a stamp's back: size, modification time and inode kept.
void change_bytes_keeping_the_stamp(const std::string& path) {
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  ::chmod(path.c_str(), 0600);
  {
    std::fstream f(path, std::ios::in | std::ios::out);
    f << "evil";
  }
  const timespec kept[2] = {{0, UTIME_OMIT}, st.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), kept, 0), 0);
}

// A stamp beside the file (`.HASH.ok`: a cache older ferryds made, or a filesystem without user
// attributes) counts as the attribute does: the file it vouches for is not read again. Without
// either, the file is read again.
TEST(FileCache, AStampBesideTheFileIsTrustedAsTheAttributeIs) {
  auto c = FileCache::open(fresh("oldstamp"));
  ASSERT_TRUE(c.ok());
  const std::vector<TreeEntry> tree = {file("a", "good bytes")};
  ASSERT_TRUE(c->receive(tree[0].hash, "good bytes", true).ok());
  const std::string cached = c->base() + "/files/" + tree[0].hash;
  const std::string ok = c->base() + "/files/." + tree[0].hash + ".ok";
  const std::string stamp = stamp_kept(*c, tree[0].hash);
  ASSERT_FALSE(stamp.empty());
  if (!fs::exists(ok)) {
    ASSERT_EQ(::removexattr(cached.c_str(), "user.ferry.stamp"), 0);
    std::ofstream(ok) << stamp;
  }
  change_bytes_keeping_the_stamp(cached);
  EXPECT_TRUE(c->missing(tree).empty()) << "the stamp beside it is trusted";
  fs::remove(ok);
  EXPECT_EQ(c->missing(tree), std::vector<std::string>{tree[0].hash}) << "no stamp: read again";
  EXPECT_FALSE(fs::exists(cached));
}

TEST(FileCache, AJobsCopyIsWholeWithModesAndLeavesTheCacheAlone) {
  auto c = FileCache::open(fresh("copy"));
  ASSERT_TRUE(c.ok());
  TreeEntry link;
  link.path = "src/cfg";
  link.kind = TreeEntry::Kind::kSymlink;
  link.target = "../conf";
  const std::vector<TreeEntry> tree = {dir("conf", 0500), file("conf/a.yaml", "a: 1\n", 0400),
                                       dir("src"), link, file("src/run.sh", "#!/bin/sh\n", 0755)};
  ASSERT_TRUE(c->receive(tree[1].hash, "a: 1\n", true).ok());
  ASSERT_TRUE(c->receive(tree[4].hash, "#!/bin/sh\n", true).ok());
  auto copy = c->materialize(tree, "123-ab");
  ASSERT_TRUE(copy.ok()) << copy.error().message;
  EXPECT_EQ(*copy, c->base() + "/jobs/123-ab");
  EXPECT_FALSE(fs::exists(*copy + ".part"));
  EXPECT_EQ(read(*copy + "/src/cfg/a.yaml"), "a: 1\n");
  EXPECT_EQ(fs::read_symlink(*copy + "/src/cfg"), "../conf");
  struct stat st {};
  ASSERT_EQ(::stat((*copy + "/src/run.sh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755U);
  ASSERT_EQ(::stat((*copy + "/conf").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0500U);
  // A rank writing into its copy: the cache keeps its bytes.
  std::ofstream(*copy + "/src/run.sh") << "changed";
  EXPECT_TRUE(c->missing(tree).empty());
  EXPECT_EQ(read(c->base() + "/files/" + tree[4].hash), "#!/bin/sh\n");
  FileCache::remove_copy(*copy);
  EXPECT_FALSE(fs::exists(*copy));
}

// A long copy out of the cache says it works on (ferryrun would take a silent host for
// lost): at most once per period, as entries are made.
TEST(FileCache, ACopyOutOfTheCacheSaysItWorksOn) {
  auto c = FileCache::open(fresh("alive"));
  ASSERT_TRUE(c.ok());
  const std::vector<TreeEntry> tree = {dir("d"), file("d/a", "a"), file("d/b", "b")};
  ASSERT_TRUE(c->receive(tree[1].hash, "a", true).ok());
  ASSERT_TRUE(c->receive(tree[2].hash, "b", true).ok());
  int told = 0;
  const StillWorking every_entry{[&] { ++told; }, std::chrono::milliseconds(0)};
  ASSERT_TRUE(c->materialize(tree, "1-a", every_entry).ok());
  EXPECT_EQ(told, 3);
  told = 0;
  const StillWorking hourly{[&] { ++told; }, std::chrono::hours(1)};
  ASSERT_TRUE(c->materialize(tree, "2-a", hourly).ok());
  EXPECT_EQ(told, 0);
  ASSERT_TRUE(c->materialize(tree, "3-a").ok());  // nobody told
}

TEST(FileCache, EvictionByAgeBySizeAndCopiesOfDeadFerryds) {
  auto c = FileCache::open(fresh("evict"));
  ASSERT_TRUE(c.ok());
  const auto a = file("a", std::string(100, 'a')), b = file("b", std::string(200, 'b'));
  ASSERT_TRUE(c->receive(a.hash, std::string(100, 'a'), true).ok());
  ASSERT_TRUE(c->receive(b.hash, std::string(200, 'b'), true).ok());
  // a was used long ago, b just now.
  const std::string pa = c->base() + "/files/" + a.hash;
  timespec old[2] = {{1000000, 0}, {1000000, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, pa.c_str(), old, 0), 0);
  fs::create_directories(c->base() + "/jobs/999999999-dead");
  fs::create_directories(c->base() + "/jobs/" + std::to_string(::getpid()) + "-live");
  EXPECT_EQ(c->evict(3600, 0), 100U);
  EXPECT_FALSE(fs::exists(pa));
  EXPECT_FALSE(fs::exists(c->base() + "/jobs/999999999-dead"));
  EXPECT_TRUE(fs::exists(c->base() + "/jobs/" + std::to_string(::getpid()) + "-live"));
  EXPECT_EQ(c->evict(0, 150), 200U);  // over the size bound: the least recently used go
  EXPECT_EQ(c->usage().files, 0U);
}

TEST(FileCache, ClearRemovesEveryFileButTheCopiesOfLiveFerryds) {
  auto c = FileCache::open(fresh("clear"));
  ASSERT_TRUE(c.ok());
  const auto a = file("a", "alpha"), b = file("b", "beta!");
  ASSERT_TRUE(c->receive(a.hash, "alpha", true).ok());
  ASSERT_TRUE(c->receive(b.hash, "beta!", true).ok());
  ASSERT_TRUE(c->missing({a}).empty());  // its stamp written
  fs::create_directories(c->base() + "/jobs/999999999-dead");
  fs::create_directories(c->base() + "/jobs/" + std::to_string(::getpid()) + "-live");
  const CacheUsage removed = c->clear();
  EXPECT_EQ(removed.files, 2U);
  EXPECT_EQ(removed.bytes, 10U);
  EXPECT_EQ(removed.copies, 1U);
  EXPECT_TRUE(fs::is_empty(c->base() + "/files"));
  EXPECT_EQ(c->usage().copies, 1U);
}

TEST(FileCache, MissingParentsAreMadePrivateToo) {
  // Shipping ferryd refuses a ~/.cache/ferry others may read: one made here must not be.
  const std::string top = fresh("parents");
  fs::remove_all(top);
  const mode_t old = ::umask(022);
  auto c = FileCache::open(top + "/ferry/sync");
  ::umask(old);
  ASSERT_TRUE(c.ok()) << c.error().message;
  for (const std::string& d :
       {top, top + "/ferry", top + "/ferry/sync", top + "/ferry/sync/files"}) {
    struct stat st {};
    ASSERT_EQ(::stat(d.c_str(), &st), 0) << d;
    EXPECT_EQ(st.st_mode & 0777, 0700U) << d;
  }
}

TEST(FileCache, ACacheOthersMayWriteIsRefused) {
  const std::string base = fresh("open");
  ASSERT_TRUE(FileCache::open(base).ok());
  ::chmod(base.c_str(), 0777);
  auto c = FileCache::open(base);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().message, base + ": writable by others (mode 777); chmod 700 it");
}

}  // namespace
}  // namespace ferry
