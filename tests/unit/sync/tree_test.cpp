// Reading a tree to sync: what is in it (files with modes and hashes, directories, links inside
// it), what is left out (patterns, the ignore file), and what is refused (a link outside, a tree
// over --sync-max) before anything is read or sent.
#include "ferry/sync/tree.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "sync_test_files.hpp"

namespace ferry {
namespace {

namespace fs = std::filesystem;

std::string fresh(const std::string& name) { return sync_test::empty_dir("synctree", name); }

void write(const std::string& path, const std::string& text, mode_t mode = 0644) {
  sync_test::write_file(path, text);
  ::chmod(path.c_str(), mode);
}

SyncRules rules_with(std::vector<std::string> excludes, uint64_t max_bytes = 0) {
  SyncRules r;
  r.excludes = std::move(excludes);
  r.max_bytes = max_bytes;
  return r;
}

std::vector<std::string> paths(const SyncTree& t) {
  std::vector<std::string> out;
  for (const auto& e : t.entries()) out.push_back(e.path);
  return out;
}

TEST(SyncTree, FilesDirectoriesAndInnerLinksWithModesAndHashes) {
  const std::string d = fresh("plain");
  write(d + "/train.py", "print('hi')\n", 0755);
  write(d + "/conf/a.yaml", "a: 1\n", 0600);
  fs::create_directory_symlink("conf", d + "/cfg");
  auto t = scan_tree({d, ""}, {});
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(paths(*t), (std::vector<std::string>{"cfg", "conf", "conf/a.yaml", "train.py"}));
  EXPECT_EQ(t->files, 2U);
  EXPECT_EQ(t->bytes, 17U);
  const TreeEntry& py = t->entries()[3];
  EXPECT_EQ(py.kind, TreeEntry::Kind::kFile);
  EXPECT_EQ(py.mode, 0755U);
  // sha256("print('hi')\n")
  EXPECT_EQ(py.hash, "caf026f25d7140209f98072605307a438914b9ce6f3c14b23d15d9667241de52");
  EXPECT_EQ(t->entries()[2].mode, 0600U);
  EXPECT_EQ(t->entries()[0].kind, TreeEntry::Kind::kSymlink);
  EXPECT_EQ(t->entries()[0].target, "conf");
}

TEST(SyncTree, DestPutsTheTreeUnderItsDirectories) {
  const std::string d = fresh("dest");
  write(d + "/x", "x");
  auto spec = parse_sync_spec(d + ":data/in");
  ASSERT_TRUE(spec.ok());
  auto t = scan_tree(*spec, {});
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(paths(*t), (std::vector<std::string>{"data", "data/in", "data/in/x"}));
}

TEST(SyncTree, ABadDestIsRefused) {
  EXPECT_EQ(parse_sync_spec("src:/abs").error().message,
            "--sync src:/abs: DEST must be relative (inside the job's own copy)");
  EXPECT_EQ(parse_sync_spec("src:a/../..").error().message,
            "--sync src:a/../..: DEST may not hold '..'");
  EXPECT_EQ(parse_sync_spec(":x").error().message, "--sync :x: no directory before ':'");
  EXPECT_EQ(parse_sync_spec("src:./").value().dest, "");
}

TEST(SyncTree, ALinkOutsideTheTreeIsRefusedNamingIt) {
  const std::string d = fresh("outside");
  fs::create_symlink("/etc/passwd", d + "/pw");
  auto t = scan_tree({d, ""}, {});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().message, d + "/pw: a symlink to /etc/passwd, outside the tree (only links "
                                   "inside it are synced; leave it out with --sync-exclude)");
  fs::remove(d + "/pw");
  write(d + "/sub/f", "f");
  fs::create_symlink("../../x", d + "/sub/up");
  EXPECT_FALSE(scan_tree({d, ""}, {}).ok());
  // Left out, it no longer matters.
  EXPECT_TRUE(scan_tree({d, ""}, rules_with({"up"})).ok());
}

TEST(SyncTree, ASymlinkLoopIsRefusedNamingIt) {
  const std::string d = fresh("loop");
  fs::create_directories(d + "/x");
  fs::create_symlink("b", d + "/x/a");
  fs::create_symlink("a", d + "/x/b");
  auto t = scan_tree({d, ""}, {});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().message, d + "/x/a: a symlink loop (x/a -> x/b -> x/a); leave it out with "
                                   "--sync-exclude");
  fs::remove(d + "/x/b");
  fs::create_symlink("../x/a", d + "/x/c");  // a chain to a dangling end is no loop
  EXPECT_TRUE(scan_tree({d, ""}, {}).ok());
}

TEST(SyncTree, ASocketIsSkippedWithALine) {
  const std::string d = fresh("socket");
  write(d + "/a", "a");
  const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string p = d + "/s.sock";
  ASSERT_LT(p.size(), sizeof addr.sun_path);
  std::strcpy(addr.sun_path, p.c_str());
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  auto t = scan_tree({d, ""}, {});
  ::close(s);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(paths(*t), std::vector<std::string>{"a"});
  ASSERT_EQ(t->skipped.size(), 1U);
  EXPECT_EQ(t->skipped[0], "skipped " + p + ": a socket is not synced");
}

TEST(SyncTree, TheFerryignoreAndExcludesLeavePathsOut) {
  const std::string d = fresh("ignore");
  write(d + "/.ferryignore", "# build outputs\nbuild/\n*.pyc\n/top.log\n!keep.pyc\n");
  write(d + "/.gitignore", "*\n");  // not read: .ferryignore is there
  write(d + "/a.py", "a");
  write(d + "/a.pyc", "c");
  write(d + "/keep.pyc", "k");
  write(d + "/build/out.o", "o");
  write(d + "/src/build/x.o", "o");
  write(d + "/top.log", "l");
  write(d + "/src/top.log", "l");
  write(d + "/data/big.bin", "b");
  auto t = scan_tree({d, ""}, rules_with({"data/**"}));
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->ignore_file, d + "/.ferryignore");
  EXPECT_EQ(paths(*t), (std::vector<std::string>{".ferryignore", ".gitignore", "a.py", "data",
                                                 "keep.pyc", "src", "src/top.log"}));
}

TEST(SyncTree, TheGitignoreIsReadWhereThereIsNoFerryignore) {
  const std::string d = fresh("gitignore");
  write(d + "/.gitignore", "__pycache__/\n");
  write(d + "/m.py", "m");
  write(d + "/__pycache__/m.cpython-311.pyc", "c");
  auto t = scan_tree({d, ""}, {});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->ignore_file, d + "/.gitignore");
  EXPECT_EQ(paths(*t), (std::vector<std::string>{".gitignore", "m.py"}));
}

TEST(SyncTree, ATreeOverTheLimitIsRefusedBeforeItIsRead) {
  const std::string d = fresh("limit");
  write(d + "/a", std::string(3000, 'a'));
  write(d + "/b", std::string(3000, 'b'));
  auto t = scan_tree({d, ""}, rules_with({}, 4096));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().message, "--sync " + d +
                                   ": 5.9 KiB in 2 files, over --sync-max 4.0 KiB (leave some "
                                   "out with --sync-exclude or a .ferryignore, or raise it)");
  EXPECT_EQ(scan_tree({d + "/a", ""}, {}).error().message, "--sync " + d + "/a: not a directory");
}

TEST(SyncTree, LaterTreesReplaceEarlierPaths) {
  const std::string a = fresh("merge-a"), b = fresh("merge-b");
  write(a + "/x", "old");
  write(a + "/y", "y");
  write(b + "/x", "new!");
  auto ta = scan_tree({a, ""}, {});
  auto tb = scan_tree({b, ""}, {});
  ASSERT_TRUE(ta.ok() && tb.ok());
  SyncTree m = merge_trees({*ta, *tb});
  EXPECT_EQ(paths(m), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(m.entries()[0].size, 4U);
  EXPECT_EQ(m.bytes, 5U);
  EXPECT_EQ(m.files, 2U);
}

}  // namespace
}  // namespace ferry
