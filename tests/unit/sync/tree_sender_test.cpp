// One host's files of a synced tree: only those it wants, in pieces, within the window of
// unacknowledged bytes; a file that changed since it was hashed is refused.
#include "ferry/sync/tree_sender.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "sync_test_files.hpp"

namespace ferry {
namespace {

namespace fs = std::filesystem;

std::string fresh(const std::string& name) { return sync_test::empty_dir("syncsend", name); }

TEST(TreeSender, SendsTheWantedFilesInPiecesWithinTheWindow) {
  const std::string d = fresh("window");
  const std::string big(TreeSender::kWindow + TreeSender::kPiece / 2, 'x');
  std::ofstream(d + "/big") << big;
  std::ofstream(d + "/small") << "s";
  std::ofstream(d + "/other") << "o";
  auto tree = scan_tree({d, ""}, {});
  ASSERT_TRUE(tree.ok());
  auto shared = std::make_shared<const SyncTree>(*tree);
  auto hash_of = [&](const std::string& path) {
    for (const auto& e : shared->entries())
      if (e.path == path) return e.hash;
    return std::string();
  };
  TreeSender s(shared);
  ASSERT_TRUE(s.need({hash_of("big"), hash_of("small")}).ok());
  EXPECT_EQ(s.bytes_wanted(), big.size() + 1);
  auto first = s.next();
  ASSERT_TRUE(first.ok());
  uint64_t sent = 0;
  for (const auto& p : *first) {
    EXPECT_EQ(p.hash, hash_of("big"));
    EXPECT_LE(p.data.size(), TreeSender::kPiece);
    sent += p.data.size();
  }
  EXPECT_EQ(sent, TreeSender::kWindow);  // the window is full: nothing more until acked
  EXPECT_FALSE(first->back().last);
  EXPECT_TRUE(s.next()->empty());
  s.acked(TreeSender::kPiece);
  auto rest = s.next();
  ASSERT_TRUE(rest.ok());
  ASSERT_EQ(rest->size(), 2U);
  EXPECT_EQ((*rest)[0].data.size(), TreeSender::kPiece / 2);
  EXPECT_TRUE((*rest)[0].last);
  EXPECT_EQ((*rest)[1].hash, hash_of("small"));
  EXPECT_EQ((*rest)[1].data, "s");
  EXPECT_TRUE(s.all_sent());
  EXPECT_EQ(s.files_sent(), 2U);
  EXPECT_FALSE(s.need({std::string(64, '0')}).ok());
}

// Two files of the same bytes are one file to the host's cache: asked for once (or twice), the
// bytes go once.
TEST(TreeSender, BytesTheTreeHoldsTwiceGoOnce) {
  const std::string d = fresh("twice");
  std::ofstream(d + "/a") << "same";
  std::ofstream(d + "/b") << "same";
  std::ofstream(d + "/c") << "other";
  auto tree = scan_tree({d, ""}, {});
  ASSERT_TRUE(tree.ok());
  ASSERT_EQ(tree->entries().size(), 3U);
  const std::string same = tree->entries()[0].hash;
  ASSERT_EQ(tree->entries()[1].hash, same);
  TreeSender s(std::make_shared<const SyncTree>(*tree));
  ASSERT_TRUE(s.need({same, same}).ok());
  EXPECT_EQ(s.bytes_wanted(), 4U);
  auto pieces = s.next();
  ASSERT_TRUE(pieces.ok());
  ASSERT_EQ(pieces->size(), 1U);
  EXPECT_EQ((*pieces)[0].data, "same");
  EXPECT_TRUE(s.all_sent());
}

TEST(TreeSender, AFileThatShrankSinceItWasHashedIsRefused) {
  const std::string d = fresh("changed");
  std::ofstream(d + "/f") << "four";
  auto tree = scan_tree({d, ""}, {});
  ASSERT_TRUE(tree.ok());
  TreeSender s(std::make_shared<const SyncTree>(*tree));
  ASSERT_TRUE(s.need({tree->entries()[0].hash}).ok());
  std::ofstream(d + "/f") << "";
  auto r = s.next();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, d + "/f: changed while it was synced (shorter)");
}

}  // namespace
}  // namespace ferry
