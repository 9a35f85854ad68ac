// SHA-256 as the synced trees' names use it: the published test vectors, in one piece and in
// many, of bytes and of a file, whichever of libcrypto's calls computes it.
#include "ferry/transport/content_hash.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

namespace ferry {
namespace {

// FIPS 180-2's examples, and the empty input.
constexpr const char* kEmpty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
constexpr const char* kAbc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
constexpr const char* kTwoBlocks =
    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1";
constexpr const char* kMillionA =
    "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";

TEST(ContentHash, GivesThePublishedDigests) {
  EXPECT_EQ(*bytes_sha256(""), kEmpty);
  EXPECT_EQ(*bytes_sha256("abc"), kAbc);
  EXPECT_EQ(*bytes_sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"), kTwoBlocks);
  EXPECT_EQ(*bytes_sha256(std::string(1'000'000, 'a')), kMillionA);
}

TEST(ContentHash, PiecesOfAnySizeGiveTheDigestOfTheWhole) {
  const std::string million(1'000'000, 'a');
  for (size_t piece : {1UL, 63UL, 64UL, 65UL, 4096UL, 999'999UL}) {
    auto h = ContentHash::start();
    ASSERT_TRUE(h.ok()) << h.error().message;
    for (size_t at = 0; at < million.size(); at += piece)
      h->update(std::string_view(million).substr(at, piece));
    h->update("");
    EXPECT_EQ(h->hex(), kMillionA) << "pieces of " << piece;
  }
  // Two digests at once keep their own state.
  auto a = ContentHash::start();
  auto b = ContentHash::start();
  ASSERT_TRUE(a.ok() && b.ok());
  a->update("ab");
  b->update("abcdbcdecdefdefgefgh");
  a->update("c");
  b->update("fghighijhijkijkljklmklmnlmnomnopnopq");
  EXPECT_EQ(a->hex(), kAbc);
  EXPECT_EQ(b->hex(), kTwoBlocks);
}

TEST(ContentHash, AFileHasTheDigestOfItsBytes) {
  const std::string path = ::testing::TempDir() + "content-hash-million-a";
  std::ofstream(path, std::ios::trunc) << std::string(1'000'000, 'a');
  EXPECT_EQ(*file_sha256(path), kMillionA);
  auto missing = file_sha256(path + ".missing");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find(path + ".missing"), std::string::npos);
}

}  // namespace
}  // namespace ferry
