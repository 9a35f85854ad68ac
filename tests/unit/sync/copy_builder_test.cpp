// A job's first copy on a host: what the cache lacks received straight into it (written once),
// and the cache taking those files in from the copy afterwards (CacheFiller).
#include "ferry/sync/copy_builder.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ferry/sync/cache_filler.hpp"
#include "ferry/transport/content_hash.hpp"
#include "sync_test_files.hpp"

namespace ferry {
namespace {

namespace fs = std::filesystem;

using sync_test::dir;
using sync_test::file;
using sync_test::read;

std::string fresh(const std::string& name) { return sync_test::fresh("copybuilder", name); }

uint32_t mode_of(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
}

// No `.HASH.part-PID` left in the cache.
size_t parts_in(const FileCache& c) {
  size_t n = 0;
  for (const auto& f : fs::directory_iterator(c.base() + "/files"))
    n += f.path().filename().string().find(".part-") != std::string::npos;
  return n;
}

// A tree whose first file the cache holds; `b` and `c` (the same bytes) and `d/e` it lacks.
struct Fixture {
  explicit Fixture(const std::string& name) : cache(*FileCache::open(fresh(name))) {
    TreeEntry link;
    link.path = "l";
    link.kind = TreeEntry::Kind::kSymlink;
    link.target = "b";
    tree = {file("a", "cached\n"), file("b", "new bytes\n", 0750), file("c", "new bytes\n", 0600),
            dir("d", 0500),        file("d/e", "deep\n", 0444),    link};
    EXPECT_TRUE(cache.receive(tree[0].hash, "cached\n", true).ok());
    receiving = cache.missing(tree);
  }
  FileCache cache;
  std::vector<TreeEntry> tree;
  std::vector<std::string> receiving;
};

TEST(CopyBuilder, WhatTheCacheLacksIsReceivedIntoTheCopyAlone) {
  Fixture f("alone");
  ASSERT_EQ(f.receiving.size(), 2U);  // b (and c), d/e
  auto b = CopyBuilder::start(f.cache, f.tree, "1-a", f.receiving);
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_TRUE(fs::is_directory(f.cache.base() + "/jobs/1-a.part"));
  EXPECT_FALSE(fs::exists(f.cache.base() + "/jobs/1-a")) << "no rank sees it half made";
  ASSERT_TRUE(b->receive(f.tree[1].hash, "new ", false).ok());
  ASSERT_TRUE(b->receive(f.tree[1].hash, "bytes\n", true).ok());
  ASSERT_TRUE(b->receive(f.tree[4].hash, "deep\n", true).ok());
  EXPECT_TRUE(b->received().empty()) << "nothing to take in before the copy is made";
  auto copy = b->finish();
  ASSERT_TRUE(copy.ok()) << copy.error().message;
  EXPECT_EQ(*copy, f.cache.base() + "/jobs/1-a");
  EXPECT_FALSE(fs::exists(*copy + ".part"));
  EXPECT_EQ(read(*copy + "/a"), "cached\n");
  EXPECT_EQ(read(*copy + "/b"), "new bytes\n");
  EXPECT_EQ(read(*copy + "/c"), "new bytes\n");
  EXPECT_EQ(read(*copy + "/d/e"), "deep\n");
  EXPECT_EQ(fs::read_symlink(*copy + "/l"), "b");
  EXPECT_EQ(mode_of(*copy + "/b"), 0750U);
  EXPECT_EQ(mode_of(*copy + "/c"), 0600U);
  EXPECT_EQ(mode_of(*copy + "/d/e"), 0444U);
  EXPECT_EQ(mode_of(*copy + "/d"), 0500U);
  // Two names of the same bytes are two files: a rank writing one leaves the other.
  struct stat sb {
  }, sc{};
  ASSERT_EQ(::stat((*copy + "/b").c_str(), &sb), 0);
  ASSERT_EQ(::stat((*copy + "/c").c_str(), &sc), 0);
  EXPECT_NE(sb.st_ino, sc.st_ino);
  // Written once: the cache has not got them (yet).
  EXPECT_EQ(f.cache.missing(f.tree), f.receiving);
  EXPECT_EQ(parts_in(f.cache), 0U);
  const auto got = b->received();
  ASSERT_EQ(got.size(), 2U);
  EXPECT_EQ(got[0].hash, f.tree[1].hash);
  EXPECT_EQ(got[0].path, *copy + "/b");
  EXPECT_EQ(got[0].size, 10U);
  EXPECT_EQ(got[1].path, *copy + "/d/e");
  FileCache::remove_copy(*copy);
}

TEST(CopyBuilder, BadBytesAFileNotAskedForOrNotReceivedLeaveNoCopy) {
  Fixture f("bad");
  {
    auto b = CopyBuilder::start(f.cache, f.tree, "2-a", f.receiving);
    ASSERT_TRUE(b.ok());
    auto bad = b->receive(f.tree[1].hash, "other bytes\n", true);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("do not match"), std::string::npos) << bad.error().message;
    EXPECT_FALSE(fs::exists(f.cache.base() + "/jobs/2-a.part/b")) << "what came of it removed";
    EXPECT_FALSE(b->receive(f.tree[0].hash, "cached\n", true).ok()) << "the cache has it";
    EXPECT_FALSE(b->receive("../../etc/passwd", "x", true).ok());
    ASSERT_TRUE(b->receive(f.tree[4].hash, "deep\n", true).ok());
    EXPECT_FALSE(b->receive(f.tree[4].hash, "deep\n", true).ok()) << "twice";
    auto copy = b->finish();
    ASSERT_FALSE(copy.ok());
    EXPECT_NE(copy.error().message.find("/b: its file was not received"), std::string::npos)
        << copy.error().message;
    EXPECT_FALSE(fs::exists(f.cache.base() + "/jobs/2-a.part"));
    EXPECT_FALSE(fs::exists(f.cache.base() + "/jobs/2-a"));
  }
  {
    // ferryrun gone half way: the builder's end removes what it made.
    auto b = CopyBuilder::start(f.cache, f.tree, "3-a", f.receiving);
    ASSERT_TRUE(b.ok());
    ASSERT_TRUE(b->receive(f.tree[1].hash, "new ", false).ok());
  }
  EXPECT_FALSE(fs::exists(f.cache.base() + "/jobs/3-a.part"));
  // A hash to receive that the tree does not hold.
  EXPECT_FALSE(CopyBuilder::start(f.cache, f.tree, "4-a", {std::string(64, 'f')}).ok());
  EXPECT_FALSE(fs::exists(f.cache.base() + "/jobs/4-a.part"));
}

// Finished: received, finish()ed, and the cache takes the files in.
std::string made_copy(Fixture& f, const std::string& name,
                      std::vector<CopyBuilder::Received>* got) {
  auto b = CopyBuilder::start(f.cache, f.tree, name, f.receiving);
  EXPECT_TRUE(b.ok());
  EXPECT_TRUE(b->receive(f.tree[1].hash, "new bytes\n", true).ok());
  EXPECT_TRUE(b->receive(f.tree[4].hash, "deep\n", true).ok());
  auto copy = b->finish();
  EXPECT_TRUE(copy.ok());
  *got = b->received();
  return copy.ok() ? *copy : "";
}

TEST(CacheFiller, TheCacheTakesInTheReceivedFilesFromTheCopy) {
  Fixture f("fill");
  std::vector<CopyBuilder::Received> got;
  const std::string copy = made_copy(f, "5-a", &got);
  CacheFiller filler(f.cache, got);
  filler.wait();
  EXPECT_EQ(filler.taken(), 2U);
  EXPECT_TRUE(f.cache.missing(f.tree).empty());
  EXPECT_EQ(read(f.cache.path_of(f.tree[1].hash)), "new bytes\n");
  EXPECT_EQ(mode_of(f.cache.path_of(f.tree[1].hash)), 0400U);
  EXPECT_EQ(parts_in(f.cache), 0U);
  // The copy is still the job's: a rank writing into it leaves the cache as it is.
  std::ofstream(copy + "/b") << "changed";
  EXPECT_TRUE(f.cache.missing(f.tree).empty());
  EXPECT_EQ(read(f.cache.path_of(f.tree[1].hash)), "new bytes\n");
  // Taken in again (another job's copy of the same files): what the cache holds stays.
  CacheFiller again(f.cache, got);
  again.wait();
  EXPECT_EQ(again.taken(), 2U) << "held already: the copies not read";
  EXPECT_EQ(read(f.cache.path_of(f.tree[1].hash)), "new bytes\n");
  FileCache::remove_copy(copy);
}

TEST(CacheFiller, AFileItsJobChangedOrRemovedIsNotTakenIn) {
  Fixture f("changed");
  std::vector<CopyBuilder::Received> got;
  const std::string copy = made_copy(f, "6-a", &got);
  ::chmod((copy + "/d").c_str(), 0700);
  ::chmod((copy + "/d/e").c_str(), 0644);
  std::ofstream(copy + "/d/e", std::ios::app) << "more\n";
  fs::remove(copy + "/b");
  fs::create_symlink("/etc/passwd", copy + "/b");  // a link in its place is not followed
  got.push_back({*bytes_sha256("not cached"), copy + "/fifo", 10});
  ASSERT_EQ(::mkfifo((copy + "/fifo").c_str(), 0600), 0);  // nor a FIFO waited on
  CacheFiller filler(f.cache, got);
  filler.wait();
  EXPECT_EQ(filler.taken(), 0U);
  EXPECT_EQ(f.cache.missing(f.tree), f.receiving);
  EXPECT_EQ(parts_in(f.cache), 0U);
  FileCache::remove_copy(copy);
}

TEST(CacheFiller, AJobsEndFinishesALittleAndGivesUpMore) {
  Fixture f("end");
  std::vector<CopyBuilder::Received> got;
  const std::string copy = made_copy(f, "7-a", &got);
  {
    CacheFiller filler(f.cache, got);  // a few bytes left: finished
  }
  EXPECT_TRUE(f.cache.missing(f.tree).empty());
  // Given up: told to stop, a file is not taken in and what was written of it is removed.
  const std::atomic<bool> stop{true};
  fs::remove(f.cache.path_of(f.tree[1].hash));
  EXPECT_FALSE(f.cache.adopt(f.tree[1].hash, copy + "/b", stop));
  EXPECT_FALSE(fs::exists(f.cache.path_of(f.tree[1].hash)));
  EXPECT_EQ(parts_in(f.cache), 0U);
  // More than a job's end waits for: what is done is good, no part is left.
  const std::string big(CacheFiller::kFinishBytes + 1, 'x');
  std::ofstream(copy + "/big") << big;
  const std::string big_hash = *bytes_sha256(big);
  { CacheFiller filler(f.cache, {{big_hash, copy + "/big", big.size()}}); }
  if (fs::exists(f.cache.path_of(big_hash))) {
    EXPECT_EQ(*file_sha256(f.cache.path_of(big_hash)), big_hash);
  }
  EXPECT_EQ(parts_in(f.cache), 0U);
  FileCache::remove_copy(copy);
}

}  // namespace
}  // namespace ferry
