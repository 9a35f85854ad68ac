// ferryrun's memory of a tree's hashes: an unchanged file is not read again, a changed one is
// (even when its size and modification time were put back), a file changed in the clock tick
// it was read in is read again, and a tree scanned twice gives the same hashes either way.
#include "ferry/sync/hash_index.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "ferry/sync/tree.hpp"
#include "ferry/transport/content_hash.hpp"
#include "sync_test_files.hpp"

namespace ferry {
namespace {

namespace fs = std::filesystem;

std::string fresh(const std::string& name) {
  std::string dir = sync_test::empty_dir("hashindex", name);
  fs::create_directories(dir + "/tree");
  return dir;
}

void write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::trunc) << text;
}

// racy 0: a stamp is trusted however soon after its change it was taken (files here are
// written just before they are hashed).
HashIndex open(const std::string& dir, int64_t racy_ns = 0) {
  return HashIndex::open(dir + "/index", dir + "/tree", racy_ns);
}

// The entries of the tree under `d` (at `dest` in the copy), scanned with its index under `d`
// ("" none: every file read), once `read` files were read for their hashes.
std::vector<TreeEntry> scan(const std::string& d, size_t read, const std::string& dest = "",
                            bool remember = true) {
  SyncRules rules;
  if (remember) rules.hash_index_dir = d + "/index";
  rules.hash_racy_ns = 0;
  auto t = scan_tree({d + "/tree", dest}, rules);
  EXPECT_TRUE(t.ok()) << t.error().message;
  if (!t) return {};
  EXPECT_EQ(t->files_read, read);
  return t->entries();
}

TEST(HashIndex, AnUnchangedFileIsNotReadAgain) {
  const std::string d = fresh("unchanged");
  write(d + "/tree/a", "alpha");
  write(d + "/tree/b", "beta");
  {
    HashIndex i = open(d);
    EXPECT_EQ(*i.hash("a", d + "/tree/a"), *bytes_sha256("alpha"));
    EXPECT_EQ(*i.hash("b", d + "/tree/b"), *bytes_sha256("beta"));
    EXPECT_EQ(i.files_read(), 2U);
    i.save();
  }
  struct stat st {};
  ASSERT_EQ(::stat((d + "/index").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700U);
  HashIndex again = open(d);
  EXPECT_EQ(*again.hash("a", d + "/tree/a"), *bytes_sha256("alpha"));
  EXPECT_EQ(*again.hash("b", d + "/tree/b"), *bytes_sha256("beta"));
  EXPECT_EQ(again.files_read(), 0U);
  EXPECT_EQ(again.files_remembered(), 2U);
}

TEST(HashIndex, AChangedFileIsReadAgainEvenWithItsSizeAndTimePutBack) {
  const std::string d = fresh("changed");
  const std::string a = d + "/tree/a";
  write(a, "alpha");
  struct stat before {};
  ASSERT_EQ(::stat(a.c_str(), &before), 0);
  {
    HashIndex i = open(d);
    ASSERT_TRUE(i.hash("a", a).ok());
    i.save();
  }
  write(a, "ALPHA");  // same size
  const struct timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, a.c_str(), times, 0), 0);
  HashIndex again = open(d);
  EXPECT_EQ(*again.hash("a", a), *bytes_sha256("ALPHA"));
  EXPECT_EQ(again.files_read(), 1U);
}

TEST(HashIndex, AStampTakenInTheTickOfAChangeIsNotTrusted) {
  const std::string d = fresh("racy");
  write(d + "/tree/a", "alpha");
  {
    HashIndex i = open(d, HashIndex::kDefaultRacyNs);
    ASSERT_TRUE(i.hash("a", d + "/tree/a").ok());
    i.save();
  }
  HashIndex again = open(d, HashIndex::kDefaultRacyNs);
  EXPECT_EQ(*again.hash("a", d + "/tree/a"), *bytes_sha256("alpha"));
  EXPECT_EQ(again.files_read(), 1U);
}

TEST(HashIndex, AnIndexOfAnotherTreeOrDamagedIsStartedAfresh) {
  const std::string d = fresh("other");
  write(d + "/tree/a", "alpha");
  {
    HashIndex i = open(d);
    ASSERT_TRUE(i.hash("a", d + "/tree/a").ok());
    i.save();
  }
  for (const auto& f : fs::directory_iterator(d + "/index")) {
    std::ofstream(f.path(), std::ios::app) << "garbage line\nnot a hash 1 2\n";
  }
  HashIndex again = open(d);
  EXPECT_EQ(*again.hash("a", d + "/tree/a"), *bytes_sha256("alpha"));
  EXPECT_EQ(again.files_read(), 0U);
  fs::create_directories(d + "/tree2");
  write(d + "/tree2/a", "alpha");
  HashIndex other = HashIndex::open(d + "/index", d + "/tree2", 0);
  EXPECT_EQ(*other.hash("a", d + "/tree2/a"), *bytes_sha256("alpha"));
  EXPECT_EQ(other.files_read(), 1U);
}

TEST(HashIndex, AScanRemembersAndGivesTheSameTree) {
  const std::string d = fresh("scan");
  for (int i = 0; i < 5; ++i) write(d + "/tree/f" + std::to_string(i), std::to_string(i));
  auto scan = [&d](size_t read) { return ferry::scan(d, read); };
  const auto first = scan(5);
  EXPECT_EQ(scan(0), first);
  write(d + "/tree/f3", "three");
  const auto third = scan(1);
  EXPECT_NE(third, first);
  // The index written after one file was read keeps the four remembered ones too.
  EXPECT_EQ(scan(0), third);
  // A file gone leaves the tree; back (a new stamp), it is read again.
  fs::remove(d + "/tree/f4");
  EXPECT_EQ(scan(0).size(), third.size() - 1);
  write(d + "/tree/f4", "4");
  EXPECT_EQ(scan(1), third);
  EXPECT_EQ(ferry::scan(d, 5, "", false), third);
}

// The index is looked up by path in the order it was written; one written in another order
// (by hand, or by an older ferryrun) is found all the same, and names whose order differs by
// component and by byte ("a.txt" before "a/b" as bytes, after it in a walk) are each found.
TEST(HashIndex, AnIndexInAnyOrderRemembersEveryFile) {
  const std::string d = fresh("order");
  fs::create_directories(d + "/tree/a/b");
  for (const char* f : {"a.txt", "a-1", "a/b/c", "a/z", "b", "a0"}) write(d + "/tree/" + f, f);
  auto scan = [&d](size_t read) { return ferry::scan(d, read, "dest/top"); };
  const auto first = scan(6);
  ASSERT_EQ(first.size(), 2U + 2U + 6U);  // dest, dest/top; a, a/b; the files
  for (const TreeEntry& e : first) EXPECT_TRUE(e.path.starts_with("dest")) << e.path;
  EXPECT_EQ(scan(0), first);
  // The index's lines reversed, its header kept first.
  ASSERT_EQ(std::distance(fs::directory_iterator(d + "/index"), fs::directory_iterator{}), 1);
  const std::string index = fs::directory_iterator(d + "/index")->path();
  std::ifstream in(index);
  std::string header, line;
  std::getline(in, header);
  std::vector<std::string> lines;
  while (std::getline(in, line)) lines.push_back(line);
  ASSERT_EQ(lines.size(), 6U);
  std::ofstream out(index, std::ios::trunc);
  out << header << '\n';
  std::reverse(lines.begin(), lines.end());
  for (const std::string& l : lines) out << l << '\n';
  out.close();
  EXPECT_EQ(scan(0), first);
}

}  // namespace
}  // namespace ferry
