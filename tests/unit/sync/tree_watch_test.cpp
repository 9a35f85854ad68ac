// A pool's watch over a --sync tree: a token is "unchanged" only while nothing in the tree
// changed since it was handed out (a write, also through a hard link from outside the tree, a
// name added in a directory made after the watch began), and trees that share directories
// each see a change in them; ferryrun's reading through it takes the launch before's snapshot when
// unchanged, and reads the tree again otherwise; a snapshot is the tree it was written from.
#include "ferry/sync/tree_watch.hpp"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "ferry/common/posix_handles.hpp"
#include "ferry/common/text.hpp"
#include "ferry/sync/tree_reader.hpp"
#include "ferry/transport/content_hash.hpp"

namespace ferry {
namespace {

namespace fs = std::filesystem;

struct TreeWatchTest : ::testing::Test {
  void SetUp() override {
    dir = ::testing::TempDir() + "tree-watch-" +
          ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir);
    root = dir + "/tree";
    fs::create_directories(root + "/pkg/sub");
    write("pkg/a.py", "a = 1\n");
    write("pkg/sub/b.py", "b = 2\n");
    write("run.py", "import pkg\n");
    root = fs::canonical(root).string();
  }
  void TearDown() override { fs::remove_all(dir); }
  // A launch's rules with a pool's socket at dir/pool.sock and its hash index under dir.
  SyncRules pooled_rules() const {
    SyncRules rules;
    rules.hash_index_dir = dir + "/hashes";
    fs::create_directories(rules.hash_index_dir);
    rules.watch_socket = dir + "/pool.sock";
    return rules;
  }
  void write(const std::string& rel, const std::string& text) {
    std::ofstream(root + "/" + rel, std::ios::trunc) << text;
  }
  std::string dir, root;
};

TEST_F(TreeWatchTest, UnchangedOnlyUntilAChange) {
  TreeWatch w;
  const auto first = w.ask(root, "");
  EXPECT_FALSE(first.unchanged);
  ASSERT_FALSE(first.token.empty());
  EXPECT_TRUE(w.ask(root, first.token).unchanged);
  // Another token (an earlier pool's, a snapshot of another epoch) begins a new epoch.
  const auto now = w.ask(root, "another-1");
  EXPECT_FALSE(now.unchanged);
  EXPECT_FALSE(w.ask(root, first.token).unchanged);
  ASSERT_TRUE(w.ask(root, w.ask(root, "x").token).unchanged);
  const auto before = w.ask(root, "y");
  ASSERT_TRUE(w.ask(root, before.token).unchanged);
  write("pkg/sub/b.py", "b = 3\n");
  const auto after = w.ask(root, before.token);
  EXPECT_FALSE(after.unchanged);
  EXPECT_NE(after.token, before.token);
  EXPECT_TRUE(w.ask(root, after.token).unchanged);
}

TEST_F(TreeWatchTest, ADirectoryMadeAfterTheWatchBeganIsWatchedFromTheNextEpoch) {
  TreeWatch w;
  auto t = w.ask(root, "");
  fs::create_directories(root + "/new/deeper");
  t = w.ask(root, t.token);
  EXPECT_FALSE(t.unchanged);  // the directory made is a change
  ASSERT_TRUE(w.ask(root, t.token).unchanged);
  write("new/deeper/c.py", "c = 1\n");
  EXPECT_FALSE(w.ask(root, t.token).unchanged);
}

TEST_F(TreeWatchTest, ChmodRenameAndRemoveAreChanges) {
  TreeWatch w;
  auto t = w.ask(root, "");
  fs::permissions(root + "/run.py", fs::perms::owner_all);
  EXPECT_FALSE((t = w.ask(root, t.token)).unchanged);
  ASSERT_TRUE(w.ask(root, t.token).unchanged);
  fs::rename(root + "/pkg/a.py", root + "/pkg/a2.py");
  EXPECT_FALSE((t = w.ask(root, t.token)).unchanged);
  ASSERT_TRUE(w.ask(root, t.token).unchanged);
  fs::remove(root + "/pkg/a2.py");
  EXPECT_FALSE(w.ask(root, t.token).unchanged);
}

TEST_F(TreeWatchTest, AWriteThroughAHardLinkFromOutsideTheTreeIsAChange) {
  const std::string outside = dir + "/outside-link";
  ASSERT_EQ(::link((root + "/pkg/sub/b.py").c_str(), outside.c_str()), 0);
  TreeWatch w;
  const auto t = w.ask(root, "");
  ASSERT_TRUE(w.ask(root, t.token).unchanged);
  // In place, the same size, by the other name: no directory of the tree sees it.
  std::fstream(outside, std::ios::in | std::ios::out) << "b = 9\n";
  EXPECT_FALSE(w.ask(root, t.token).unchanged);
}

TEST_F(TreeWatchTest, TreesThatShareDirectoriesEachSeeAChangeInThem) {
  const std::string inner = root + "/pkg";
  TreeWatch w;
  auto outer_t = w.ask(root, "");
  auto inner_t = w.ask(inner, "");
  ASSERT_TRUE(w.ask(root, outer_t.token).unchanged);
  ASSERT_TRUE(w.ask(inner, inner_t.token).unchanged);
  write("pkg/sub/b.py", "b = 4\n");
  EXPECT_FALSE((outer_t = w.ask(root, outer_t.token)).unchanged);
  EXPECT_FALSE((inner_t = w.ask(inner, inner_t.token)).unchanged);
  // Watched again, each: a later change is seen by both, and one tree's new epoch (its
  // watches placed again) is no change of the other's.
  ASSERT_TRUE(w.ask(inner, inner_t.token).unchanged);
  ASSERT_TRUE(w.ask(root, outer_t.token).unchanged);
  fs::remove_all(root + "/pkg/sub");
  EXPECT_FALSE((inner_t = w.ask(inner, inner_t.token)).unchanged);
  EXPECT_FALSE(w.ask(root, outer_t.token).unchanged);
  EXPECT_TRUE(w.ask(inner, inner_t.token).unchanged);
}

TEST_F(TreeWatchTest, NotARealPathOrAFileSystemInotifyMayNotSeeIsNotWatched) {
  TreeWatch w;
  EXPECT_TRUE(w.ask("relative/path", "").token.empty());
  EXPECT_TRUE(w.ask(root + "/missing", "").token.empty());
  EXPECT_TRUE(w.ask("/proc/sys/fs", "").token.empty());  // not a local disk's or memory's
  EXPECT_FALSE(w.ask(root, "").token.empty());
}

TEST_F(TreeWatchTest, ASnapshotIsTheTreeItWasWrittenFrom) {
  SyncRules rules;
  auto tree = scan_tree({root, "dest/in"}, rules);
  ASSERT_TRUE(tree.ok()) << tree.error().message;
  tree->skipped.push_back("skipped x: a socket is not synced");
  tree->digest = *tree_digest(tree->entries());
  auto back = decode_tree(encode_tree(*tree));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->entries(), tree->entries());
  EXPECT_EQ(back->bytes, tree->bytes);
  EXPECT_EQ(back->files, tree->files);
  EXPECT_EQ(back->skipped, tree->skipped);
  EXPECT_EQ(back->digest, tree->digest);
  const std::string bytes = encode_tree(*tree);
  EXPECT_FALSE(decode_tree(bytes.substr(0, bytes.size() - 3)).has_value());
  EXPECT_FALSE(decode_tree(bytes + "x").has_value());
}

TEST_F(TreeWatchTest, TheDigestIsEachEntryAsItWasHashedPieceByPiece) {
  // tree_digest() hashes the entries' text in large pieces; the digest is that of the text
  // "KIND MODE SIZE HASH LEN:PATH LEN:TARGET" of each entry, as a spare on a host is named.
  auto tree = scan_tree({root, ""}, SyncRules{});
  ASSERT_TRUE(tree.ok());
  TreeEntry link;
  link.path = "cfg link";
  link.kind = TreeEntry::Kind::kSymlink;
  link.target = "pkg";
  tree->entries().push_back(link);
  std::string text;
  for (const TreeEntry& e : tree->entries())
    text += std::to_string(static_cast<int>(e.kind)) + ' ' + std::to_string(e.mode) + ' ' +
            std::to_string(e.size) + ' ' + e.hash + ' ' + std::to_string(e.path.size()) + ':' +
            e.path + ' ' + std::to_string(e.target.size()) + ':' + e.target;
  EXPECT_EQ(*tree_digest(tree->entries()), *bytes_sha256(text));
}

// A pool's control socket that answers "tree" as the pool does, from a TreeWatch.
struct FakePool {
  explicit FakePool(const std::string& path) : path_(path) {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    listener_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    EXPECT_EQ(::bind(listener_.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(listener_.get(), 4), 0);
    thread_ = std::thread([this] {
      while (!stop_) {
        pollfd p{listener_.get(), POLLIN, 0};
        if (::poll(&p, 1, 20) != 1) continue;
        const UniqueFd c(::accept(listener_.get(), nullptr, nullptr));
        std::string line;
        char buf[512];
        ssize_t got = 0;
        while (line.find('\n') == std::string::npos &&
               (got = ::recv(c.get(), buf, sizeof buf, 0)) > 0)
          line.append(buf, static_cast<size_t>(got));
        line.resize(line.find('\n'));
        const auto words = split(line, ' ');
        const auto a = watch_.ask(line.substr(5 + words[1].size() + 1), words[1]);
        ++asked;
        const std::string reply = std::string(a.unchanged ? "unchanged " : "read ") +
                                  (a.token.empty() ? "-" : a.token) + "\n";
        [[maybe_unused]] auto w = ::send(c.get(), reply.data(), reply.size(), MSG_NOSIGNAL);
      }
    });
  }
  ~FakePool() {
    stop_ = true;
    thread_.join();
    ::unlink(path_.c_str());
  }
  std::atomic<int> asked{0};

 private:
  std::string path_;
  TreeWatch watch_;
  UniqueFd listener_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST_F(TreeWatchTest, ALaunchTakesTheSnapshotOnlyWhileTheTreeIsUnchanged) {
  FakePool pool(dir + "/pool.sock");
  SyncRules rules = pooled_rules();
  const SyncSpec spec{root, ""};
  auto first = scan_tree_watched(spec, rules);
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_FALSE(first->from_snapshot);
  auto second = scan_tree_watched(spec, rules);
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(second->from_snapshot);
  EXPECT_TRUE(second->entries_deferred());  // only the digest is needed until a host lacks it
  EXPECT_EQ(second->entries(), first->entries());
  EXPECT_FALSE(second->entries_deferred());
  EXPECT_EQ(second->digest, first->digest);
  EXPECT_EQ(pool.asked.load(), 2);
  // Changed: read again, and the change is in it.
  write("pkg/a.py", "a = 2  # longer\n");
  auto third = scan_tree_watched(spec, rules);
  ASSERT_TRUE(third.ok());
  EXPECT_FALSE(third->from_snapshot);
  EXPECT_NE(third->digest, first->digest);
  auto fourth = scan_tree_watched(spec, rules);
  ASSERT_TRUE(fourth.ok());
  EXPECT_TRUE(fourth->from_snapshot);
  EXPECT_EQ(fourth->entries(), third->entries());
  // Other rules (an exclude) are another snapshot: read, and without the excluded file.
  rules.excludes.push_back("run.py");
  auto fifth = scan_tree_watched(spec, rules);
  ASSERT_TRUE(fifth.ok());
  EXPECT_FALSE(fifth->from_snapshot);
  EXPECT_EQ(fifth->entries().size(), third->entries().size() - 1);
  // Through read_sync_request, the digest the snapshot keeps is the tree's.
  SyncRequest request;
  request.parts.push_back({SyncSpec{root, ""}, {}, ""});
  request.rules = rules;
  auto via = read_sync_request(request);
  ASSERT_TRUE(via.ok());
  EXPECT_TRUE(via->from_snapshot);
  EXPECT_EQ(via->digest, *tree_digest(via->entries()));
}

// A snapshot taken by a launch is decoded from the file as it was then, whatever launch writes
// the next one; a snapshot cut short or with bytes after its end is not taken: the tree is read.
TEST_F(TreeWatchTest, ATakenSnapshotsEntriesAreThoseItHeldAndABrokenOneIsNotTaken) {
  FakePool pool(dir + "/pool.sock");
  SyncRules rules = pooled_rules();
  const SyncSpec spec{root, ""};
  auto first = scan_tree_watched(spec, rules);
  ASSERT_TRUE(first.ok()) << first.error().message;
  auto taken = scan_tree_watched(spec, rules);
  ASSERT_TRUE(taken.ok());
  ASSERT_TRUE(taken->entries_deferred());
  // A change, and a launch that reads the tree and writes a new snapshot over the old one.
  write("run.py", "import pkg  # changed\n");
  auto changed = scan_tree_watched(spec, rules);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(changed->from_snapshot);
  EXPECT_EQ(taken->entries(), first->entries());
  EXPECT_NE(changed->entries(), first->entries());

  std::vector<fs::path> snapshots;
  for (const auto& e : fs::directory_iterator(rules.hash_index_dir))
    if (e.path().extension() == ".snapshot") snapshots.push_back(e.path());
  ASSERT_EQ(snapshots.size(), 1u);
  std::string bytes;
  {
    std::ifstream in(snapshots[0], std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  for (const std::string& broken : {bytes.substr(0, bytes.size() - 40), bytes + "x"}) {
    ASSERT_TRUE(scan_tree_watched(spec, rules)->from_snapshot);  // the watch's epoch goes on
    std::ofstream(snapshots[0], std::ios::binary | std::ios::trunc) << broken;
    auto again = scan_tree_watched(spec, rules);
    ASSERT_TRUE(again.ok()) << again.error().message;
    EXPECT_FALSE(again->from_snapshot);
    EXPECT_EQ(again->entries(), changed->entries());
  }
}

TEST_F(TreeWatchTest, WithoutAPoolTheTreeIsRead) {
  SyncRules rules;
  rules.hash_index_dir = dir + "/hashes";
  rules.watch_socket = dir + "/no-pool.sock";
  auto t = scan_tree_watched({root, ""}, rules);
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(t->from_snapshot);
  EXPECT_FALSE(scan_tree_watched({root, ""}, rules)->from_snapshot);
}

}  // namespace
}  // namespace ferry
