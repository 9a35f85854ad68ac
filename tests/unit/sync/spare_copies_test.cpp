// Spare copies: a job's copy kept and taken by the next job of the same tree, mended back to
// exactly the tree whatever its job did to it (a file written or chmod'ed, one removed, names
// added, a directory replaced or made unreadable), taken by one job only, and bounded.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "ferry/sync/file_cache.hpp"
#include "ferry/sync/tree.hpp"
#include "ferry/transport/content_hash.hpp"

namespace ferry {
namespace {

namespace fs = std::filesystem;

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ino_t inode(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

mode_t mode(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
}

struct Spares : ::testing::Test {
  void SetUp() override {
    base = ::testing::TempDir() + "spares-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    if (fs::exists(base)) FileCache::remove_copy(base);
    auto c = FileCache::open(base);
    ASSERT_TRUE(c.ok()) << c.error().message;
    cache.emplace(std::move(*c));
    add_dir("conf", 0755);
    add_file("conf/a.yaml", "a: 1\n", 0600);
    add_file("run.py", "print(1)\n", 0755);
    add_dir("data", 0555);
    add_file("data/x.bin", std::string(5000, 'x'), 0644);
    TreeEntry link;
    link.path = "cfg";
    link.kind = TreeEntry::Kind::kSymlink;
    link.target = "conf";
    entries.push_back(link);
    digest = *tree_digest(entries);
    ASSERT_EQ(digest.size(), 64U);
  }
  void TearDown() override {
    cache.reset();
    if (fs::exists(base)) FileCache::remove_copy(base);
  }
  std::string base;
  void add_dir(const std::string& path, uint32_t m) {
    TreeEntry e;
    e.path = path;
    e.kind = TreeEntry::Kind::kDirectory;
    e.mode = m;
    entries.push_back(e);
  }
  void add_file(const std::string& path, const std::string& bytes, uint32_t m) {
    TreeEntry e;
    e.path = path;
    e.kind = TreeEntry::Kind::kFile;
    e.mode = m;
    e.size = bytes.size();
    e.hash = *bytes_sha256(bytes);
    ASSERT_TRUE(cache->receive(e.hash, bytes, true).ok());
    entries.push_back(e);
    contents[path] = bytes;
  }
  // A job's copy made, stamped and kept, as ferryd does.
  void kept_copy(const std::string& name) {
    auto made = cache->materialize(entries, name);
    ASSERT_TRUE(made.ok()) << made.error().message;
    first = *made;
    stamps = FileCache::stamp_copy(first, entries);
    ASSERT_EQ(stamps.size(), entries.size());
    inode_x = inode(first + "/data/x.bin");
  }
  void keep() { cache->keep_spare(first, digest, stamps); }
  // The copy at `root` is the tree, exactly.
  void expect_tree(const std::string& root) {
    std::set<std::string> found;
    for (auto it = fs::recursive_directory_iterator(root); it != fs::end(it); ++it)
      found.insert(it->path().lexically_relative(root).generic_string());
    std::set<std::string> want;
    for (const TreeEntry& e : entries) want.insert(e.path);
    EXPECT_EQ(found, want);
    for (const auto& [path, bytes] : contents) EXPECT_EQ(read(root + "/" + path), bytes) << path;
    for (const TreeEntry& e : entries) {
      if (e.kind != TreeEntry::Kind::kSymlink) {
        EXPECT_EQ(mode(root + "/" + e.path), e.mode) << e.path;
      }
    }
    if (want.contains("cfg")) {
      EXPECT_EQ(fs::read_symlink(root + "/cfg"), "conf");
    }
  }

  std::optional<FileCache> cache;
  std::vector<TreeEntry> entries;
  std::map<std::string, std::string> contents;
  std::string digest, first;
  FileCache::CopyStamps stamps;
  ino_t inode_x = 0;
};

TEST_F(Spares, AnUntouchedCopyIsTakenAsItIs) {
  kept_copy("1-a");
  keep();
  EXPECT_FALSE(fs::exists(first));
  EXPECT_EQ(cache->usage().spares, 1U);
  size_t mended = 99;
  const std::string again = cache->reuse_spare(entries, digest, "2-b", &mended);
  ASSERT_EQ(again, cache->base() + "/jobs/2-b");
  EXPECT_EQ(mended, 0U);
  EXPECT_EQ(inode(again + "/data/x.bin"), inode_x);  // not copied again
  expect_tree(again);
  EXPECT_EQ(cache->usage().spares, 0U);
  // Taken: a second job of the tree finds none.
  EXPECT_EQ(cache->reuse_spare(entries, digest, "3-c"), "");
}

TEST_F(Spares, WhatItsJobChangedIsMadeAgain) {
  kept_copy("1-a");
  // A write of the same size, a chmod, a file removed, names added, a directory made
  // unreadable with something inside, a link pointed elsewhere.
  { std::ofstream(first + "/run.py", std::ios::in | std::ios::out) << "PRINT"; }
  ::chmod((first + "/conf/a.yaml").c_str(), 0644);
  fs::remove(first + "/conf/a.yaml");
  std::ofstream(first + "/conf/extra") << "x";
  ::chmod((first + "/data").c_str(), 0755);
  fs::create_directories(first + "/data/__pycache__/deep");
  ::chmod((first + "/data/__pycache__/deep").c_str(), 0);
  ::chmod((first + "/data").c_str(), 0);
  std::ofstream(first + "/output.log") << "log";
  fs::remove(first + "/cfg");
  fs::create_directory_symlink("/etc", first + "/cfg");
  keep();
  size_t mended = 0;
  const std::string again = cache->reuse_spare(entries, digest, "2-b", &mended);
  ASSERT_FALSE(again.empty());
  EXPECT_GT(mended, 0U);
  expect_tree(again);
  EXPECT_EQ(inode(again + "/data/x.bin"), inode_x);  // untouched: kept
}

TEST_F(Spares, AReplacedDirectoryIsMadeAgainWhole) {
  kept_copy("1-a");
  fs::rename(first + "/conf", first + "/old-conf");
  fs::create_directories(first + "/conf");
  std::ofstream(first + "/conf/a.yaml") << "a: 1\n";  // same bytes, not the same file
  keep();
  const std::string again = cache->reuse_spare(entries, digest, "2-b");
  ASSERT_FALSE(again.empty());
  expect_tree(again);
}

TEST_F(Spares, AnotherVersionOfTheTreeTakesItMended) {
  kept_copy("1-a");
  keep();
  // The link gone, run.py's bytes changed (same size), a file and a directory added.
  entries.pop_back();
  contents["run.py"] = "print(2)\n";
  entries[2].hash = *bytes_sha256("print(2)\n");
  ASSERT_TRUE(cache->receive(entries[2].hash, "print(2)\n", true).ok());
  add_dir("new", 0700);
  add_file("new/n.txt", "n", 0644);
  size_t mended = 0;
  const std::string again = cache->reuse_spare(entries, *tree_digest(entries), "2-b", &mended);
  ASSERT_FALSE(again.empty());
  EXPECT_EQ(mended, 3U);  // run.py, new, new/n.txt (the link's directory is the top)
  expect_tree(again);
  EXPECT_EQ(inode(again + "/data/x.bin"), inode_x);
}

// After mending, only what was touched is stat-ed again: the stamps are those a full stamp of
// the mended copy takes, entry for entry (a directory that held a changed file included).
TEST_F(Spares, StampsAfterMendingAreThoseOfTheMendedCopy) {
  kept_copy("1-a");
  { std::ofstream(first + "/conf/a.yaml", std::ios::in | std::ios::out) << "b"; }
  std::ofstream(first + "/data-extra") << "x";
  keep();
  contents["run.py"] = "print(3)\n";
  entries[2].hash = *bytes_sha256("print(3)\n");
  ASSERT_TRUE(cache->receive(entries[2].hash, "print(3)\n", true).ok());
  add_file("conf/b.yaml", "b: 2\n", 0640);
  auto spare = cache->take_spare(entries, *tree_digest(entries), "2-b");
  ASSERT_TRUE(spare.has_value());
  size_t told = 0;  // a sign of life per entry made again, with no period between them
  ASSERT_TRUE(
      cache->mend_spare(*spare, entries, {[&] { ++told; }, std::chrono::milliseconds(0)}).ok());
  EXPECT_EQ(told, spare->changed.size());
  EXPECT_GE(told, 3U);
  expect_tree(spare->path);
  const FileCache::CopyStamps partly = FileCache::restamp_copy(*spare, entries);
  const FileCache::CopyStamps fully = FileCache::stamp_copy(spare->path, entries);
  ASSERT_EQ(partly.size(), entries.size());
  EXPECT_EQ(partly, fully);
  // And the copy kept by them is taken as it is by the next job.
  cache->keep_spare(spare->path, *tree_digest(entries), partly);
  EXPECT_TRUE(cache->take_untouched_spare(*tree_digest(entries), "3-c").has_value());
}

// A spare taken untouched and kept again by its job: its stamps file goes with it (the same
// inode: nothing written, nothing freed); one gone meanwhile (a cache cleared) is written anew.
TEST_F(Spares, AnUntouchedSpareKeptAgainKeepsItsStampsFile) {
  kept_copy("1-a");
  keep();
  auto stamps_files = [&] {
    std::vector<std::string> out;
    for (const auto& f : fs::directory_iterator(cache->base() + "/spares"))
      if (f.path().string().ends_with(".stamps")) out.push_back(f.path().string());
    return out;
  };
  ASSERT_EQ(stamps_files().size(), 1U);
  // A second name holds the file's inode, so no file written later can be given that number.
  const std::string holder = ::testing::TempDir() + "spares-stamps-holder";
  fs::remove(holder);
  fs::create_hard_link(stamps_files()[0], holder);
  const ino_t kept = inode(holder);
  auto spare = cache->take_untouched_spare(digest, "2-b");
  ASSERT_TRUE(spare.has_value());
  ASSERT_FALSE(spare->stamps_file.empty());
  EXPECT_TRUE(stamps_files().empty()) << "taken: no spare for another job";
  EXPECT_EQ(cache->usage().spares, 0U);
  cache->keep_spare(spare->path, digest, spare->stamps, spare->stamps_file);
  ASSERT_EQ(stamps_files().size(), 1U);
  EXPECT_EQ(inode(stamps_files()[0]), kept);
  EXPECT_FALSE(fs::exists(spare->stamps_file));
  auto again = cache->take_untouched_spare(digest, "3-c");
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->stamps, stamps);
  fs::remove(again->stamps_file);
  cache->keep_spare(again->path, digest, again->stamps, again->stamps_file);
  ASSERT_EQ(stamps_files().size(), 1U);
  EXPECT_NE(inode(stamps_files()[0]), kept);
  auto third = cache->take_untouched_spare(digest, "4-d");
  ASSERT_TRUE(third.has_value());
  EXPECT_EQ(third->stamps, stamps);
  expect_tree(third->path);
  fs::remove(holder);
}

// A deeper tree: each entry is stat-ed from the directory that holds it, opened once while the
// entries stay below it, whether the next one is deeper, a sibling's or back up the tree. An
// entry written after the spare was kept is found wherever it sits (the newest spare is
// checked first, and a touched one is not taken).
TEST_F(Spares, AnUntouchedDeepSpareIsCheckedAtEveryLevel) {
  entries.clear();
  contents.clear();
  add_dir("a", 0755);
  add_dir("a/b", 0755);
  add_dir("a/b/c", 0755);
  add_file("a/b/c/f1", "1", 0644);
  add_file("a/b/f2", "2", 0644);
  add_dir("a/b2", 0755);
  add_file("a/b2/f3", "3", 0644);
  add_file("a/f4", "4", 0644);
  add_dir("z", 0755);
  add_file("z/f5", "5", 0644);
  add_file("top.txt", "t", 0644);
  digest = *tree_digest(entries);
  int n = 0;
  for (const std::string path : {"", "a/b/f2", "a/f4", "a/b2/f3", "top.txt", "a/b/c/f1"}) {
    const std::string name = std::to_string(++n);
    kept_copy(name + "-a");
    if (!path.empty()) std::ofstream(first + "/" + path, std::ios::app) << "x";
    keep();
    auto spare = cache->take_untouched_spare(digest, name + "-b");
    EXPECT_EQ(spare.has_value(), path.empty()) << (path.empty() ? "untouched" : path);
    if (spare) {
      expect_tree(spare->path);
      FileCache::remove_copy(spare->path);
    }
  }
}

TEST_F(Spares, AtMostTwoAreKept) {
  for (int i = 0; i < 3; ++i) {
    kept_copy("9-" + std::to_string(i));
    keep();
  }
  EXPECT_EQ(cache->usage().spares, FileCache::kSpares);
  const CacheUsage removed = cache->clear();
  EXPECT_EQ(removed.spares, FileCache::kSpares);
  EXPECT_TRUE(fs::is_empty(cache->base() + "/spares"));
}

TEST_F(Spares, StampsOfACopyWithAnEntryMissingAreNone) {
  kept_copy("1-a");
  fs::remove(first + "/run.py");
  EXPECT_TRUE(FileCache::stamp_copy(first, entries).empty());
  cache->keep_spare(first, digest, {});  // nothing to keep it by: removed
  EXPECT_FALSE(fs::exists(first));
  EXPECT_EQ(cache->usage().spares, 0U);
}

// A spare's stamps are its lines in one text, as its stamps file holds them.
TEST(CopyStamps, AreTheLinesOfOneTextAndReadBackAsWritten) {
  FileCache::CopyStamps s;
  s.reserve(3, 64);
  s.push_back("1:2:3 4:a.py 1 420 3 HASH ");
  s.push_back("");
  s.push_back("5:6:0 3:d/e 0 493 0  ");
  ASSERT_EQ(s.size(), 3U);
  EXPECT_EQ(s[0], "1:2:3 4:a.py 1 420 3 HASH ");
  EXPECT_EQ(s[1], "");
  EXPECT_EQ(s[2], "5:6:0 3:d/e 0 493 0  ");
  EXPECT_EQ(s.text(), "1:2:3 4:a.py 1 420 3 HASH \n\n5:6:0 3:d/e 0 493 0  \n");
  EXPECT_EQ(FileCache::CopyStamps::from_text(std::string(s.text())), s);
  // A last line without its newline is a line all the same; no text, no lines.
  const auto cut = FileCache::CopyStamps::from_text("x\ny");
  ASSERT_EQ(cut.size(), 2U);
  EXPECT_EQ(cut[0], "x");
  EXPECT_EQ(cut[1], "y");
  EXPECT_TRUE(FileCache::CopyStamps::from_text("").empty());
  EXPECT_TRUE(s.whole_lines());
  FileCache::CopyStamps two_in_one;
  two_in_one.push_back("a\nb");  // a line holding a newline: not a stamps file's line
  EXPECT_FALSE(two_in_one.whole_lines());
}

// Stamps read from their file (mapped, not copied) are the lines as written.
TEST(CopyStamps, ReadFromTheirFileAreTheLinesAsWritten) {
  FileCache::CopyStamps s;
  s.push_back("1:2:3 4:a.py 1 420 3 HASH ");
  s.push_back("5:6:0 3:d/e 0 493 0  ");
  const std::string path = ::testing::TempDir() + "stamps-read-" + std::to_string(::getpid());
  std::ofstream(path, std::ios::trunc) << s.text();
  auto mapped = MappedFile::open(path, 1 << 20, "stamps file");
  // Cut short: its last line has no newline (a file of its own: a mapped one is never
  // rewritten in place).
  const std::string cut_path = path + "-cut";
  std::ofstream(cut_path, std::ios::trunc) << "x\ny";
  auto cut_file = MappedFile::open(cut_path, 1 << 20, "stamps file");
  fs::remove(path);
  fs::remove(cut_path);
  ASSERT_TRUE(mapped && cut_file);
  EXPECT_TRUE(mapped->mapped());
  const auto read = FileCache::CopyStamps::from_file(std::move(*mapped));
  EXPECT_EQ(read, s);
  EXPECT_EQ(read[1], "5:6:0 3:d/e 0 493 0  ");
  EXPECT_TRUE(read.whole_lines());
  const auto cut = FileCache::CopyStamps::from_file(std::move(*cut_file));
  ASSERT_EQ(cut.size(), 2U);
  EXPECT_EQ(cut[1], "y");
  EXPECT_TRUE(cut.whole_lines());
}

// A stamps file whose line names a path longer than the line (damaged, cut short) holds no
// stamp of that entry: the spare is not taken as untouched, and not taken to be mended either
// (its copy is removed).
TEST_F(Spares, ASpareWhoseStampsAreDamagedIsNotTaken) {
  kept_copy("1-a");
  keep();
  std::string file;
  for (const auto& f : fs::directory_iterator(cache->base() + "/spares"))
    if (f.path().string().ends_with(".stamps")) file = f.path().string();
  ASSERT_FALSE(file.empty());
  std::string text = read(file);
  const size_t last = text.rfind('\n', text.size() - 2) + 1;
  const size_t sp = text.find(' ', last);
  ASSERT_LT(sp, text.size());
  text.replace(sp + 1, text.find(':', sp) - sp - 1, "99999");
  std::ofstream(file, std::ios::trunc) << text;
  EXPECT_FALSE(cache->take_untouched_spare(digest, "2-b").has_value());
  EXPECT_EQ(cache->reuse_spare(entries, digest, "3-c"), "");
  EXPECT_EQ(cache->usage().spares, 0U);
}

}  // namespace
}  // namespace ferry
