// --sync's request: what is refused before any host is reached (what needs no walk), the
// whole reading of its parts (merged, their sum against --sync-max, the digest), and the
// reading on a thread of its own, which stops when asked.
#include "ferry/sync/tree_reader.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>

#include "sync_test_files.hpp"

namespace ferry {
namespace {

namespace fs = std::filesystem;

std::string fresh(const std::string& name) { return sync_test::empty_dir("syncreq", name); }

void write(const std::string& path, const std::string& text) { sync_test::write_file(path, text); }

SyncRequest::Part tree_part(const std::string& dir, const std::string& dest = "") {
  return {SyncSpec{dir, dest}, {}, ""};
}

TEST(SyncRequest, WhatNeedsNoWalkIsRefusedByTheCheck) {
  const std::string d = fresh("check");
  write(d + "/t/a", "a");
  write(d + "/f", "f");
  write(d + "/other/f", "g");
  fs::create_symlink("/etc", d + "/t/out");
  SyncRequest ok;
  ok.parts = {tree_part(d + "/t"), {std::nullopt, {d + "/f"}, "--preload-files"}};
  // A link out of the tree needs the walk: the check lets it by, the reading refuses it.
  EXPECT_TRUE(check_sync_request(ok).ok());
  auto read = read_sync_request(ok);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.error().message.find(d + "/t/out: a symlink to /etc, outside the tree"),
            std::string::npos)
      << read.error().message;

  SyncRequest file_as_dir;
  file_as_dir.parts = {tree_part(d + "/f")};
  EXPECT_EQ(check_sync_request(file_as_dir).error().message, "--sync " + d + "/f: not a directory");
  SyncRequest missing;
  missing.parts = {tree_part(d + "/nope")};
  EXPECT_EQ(check_sync_request(missing).error().message, "--sync " + d + "/nope: not a directory");
  SyncRequest dir_as_file;
  dir_as_file.parts = {{std::nullopt, {d + "/t"}, "--preload-files"}};
  EXPECT_EQ(check_sync_request(dir_as_file).error().message,
            "--preload-files " + d + "/t: not a file");
  SyncRequest same_name;
  same_name.parts = {{std::nullopt, {d + "/f", d + "/other/f"}, "--preload-files"}};
  EXPECT_EQ(check_sync_request(same_name).error().message, "--preload-files: two files named f");
}

TEST(SyncRequest, ThePartsAreMergedTheirSumHeldToTheLimitAndTheTreeNamed) {
  const std::string a = fresh("sum-a"), b = fresh("sum-b"), f = fresh("sum-f");
  write(a + "/x", std::string(3000, 'x'));
  write(b + "/y", std::string(3000, 'y'));
  write(f + "/solo", "s");
  SyncRequest r;
  r.parts = {tree_part(a), tree_part(b, "sub"), {std::nullopt, {f + "/solo"}, "--preload-files"}};
  auto tree = read_sync_request(r);
  ASSERT_TRUE(tree.ok()) << tree.error().message;
  std::vector<std::string> paths;
  for (const TreeEntry& e : tree->entries()) paths.push_back(e.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"solo", "sub", "sub/y", "x"}));
  EXPECT_EQ(tree->files, 3U);
  EXPECT_EQ(tree->bytes, 6001U);
  EXPECT_EQ(tree->digest, *tree_digest(tree->entries()));
  // Each part is under the limit, the sum is not.
  r.rules.max_bytes = 5000;
  auto over = read_sync_request(r);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().message, "--sync: 5.9 KiB in all, over --sync-max 4.9 KiB");
}

TEST(SyncRequest, AReadingAskedToStopEndsWithAnError) {
  const std::string d = fresh("stop");
  write(d + "/a/f", "f");
  SyncRequest r;
  r.parts = {tree_part(d)};
  const std::atomic<bool> stop{true};
  r.rules.stop = &stop;
  auto t = read_sync_request(r);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().message, "--sync: reading stopped");
}

TEST(SyncRequest, TheReaderGivesTheTreeOnceFromItsOwnThread) {
  const std::string d = fresh("reader");
  write(d + "/a/f", "f");
  write(d + "/b", "b");
  SyncRequest r;
  r.parts = {tree_part(d)};
  std::promise<Result<SyncTree>> got;
  std::promise<std::thread::id> on;
  TreeReader reader(r, [&](Result<SyncTree> t) {
    on.set_value(std::this_thread::get_id());
    got.set_value(std::move(t));
  });
  EXPECT_NE(on.get_future().get(), std::this_thread::get_id());
  auto tree = got.get_future().get();
  ASSERT_TRUE(tree.ok()) << tree.error().message;
  EXPECT_EQ(tree->digest, read_sync_request(r)->digest);
  EXPECT_EQ(tree->files, 2U);
}

// Destroyed at once, a reader stops between directories: its one call says so, or brings the
// tree if the reading was done first; either way the destructor returns.
TEST(SyncRequest, AReaderDestroyedAtOnceCallsBackOnceAndReturns) {
  const std::string d = fresh("early");
  for (int i = 0; i < 200; ++i) write(d + "/d" + std::to_string(i) + "/f", "f");
  SyncRequest r;
  r.parts = {tree_part(d)};
  std::atomic<int> calls{0};
  std::string outcome;
  {
    TreeReader reader(r, [&](const Result<SyncTree>& t) {
      ++calls;
      outcome = t.ok() ? "tree" : t.error().message;
    });
  }
  EXPECT_EQ(calls.load(), 1);
  EXPECT_TRUE(outcome == "tree" || outcome == "--sync: reading stopped") << outcome;
}

}  // namespace
}  // namespace ferry
