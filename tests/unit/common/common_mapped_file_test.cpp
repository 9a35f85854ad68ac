// A file mapped rather than read: the same bytes and errors as read_text_file, views that stay
// valid when the MappedFile moves, and a read where a file cannot be mapped.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include "ferry/common/mapped_file.hpp"

namespace ferry {
namespace {

std::string temp_file(const std::string& name, const std::string& text) {
  std::string path = testing::TempDir() + "ferry_mapped_" + name + "_" + std::to_string(getpid());
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(CommonMappedFile, MapsARegularFileWhole) {
  const std::string text = std::string("a\0b\n", 4) + std::string(300000, 'x') + "\nend";
  const std::string path = temp_file("whole", text);
  auto f = MappedFile::open(path, size_t{1} << 20, "test file");
  std::filesystem::remove(path);  // a mapping outlives the file's name
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_TRUE(f->mapped());
  EXPECT_EQ(f->text(), text);
}

TEST(CommonMappedFile, ViewsStayValidWhenItMoves) {
  for (const std::string& text : {std::string(5000, 'y'), std::string("short")}) {
    const std::string path = temp_file("moves", text);
    auto f = MappedFile::open(path, 1 << 20, "test file");
    std::filesystem::remove(path);
    ASSERT_TRUE(f) << f.error().message;
    const std::string_view before = f->text();
    MappedFile moved = std::move(*f);
    EXPECT_EQ(moved.text().data(), before.data());
    EXPECT_EQ(moved.text(), text);
    MappedFile assigned;
    assigned = std::move(moved);
    EXPECT_EQ(assigned.text().data(), before.data());
    EXPECT_EQ(assigned.text(), text);
  }
}

TEST(CommonMappedFile, ReadsWhatCannotBeMapped) {
  // /proc files report no size: read to their end, as read_text_file reads them.
  auto proc = MappedFile::open("/proc/self/status", 1 << 20, "status file");
  ASSERT_TRUE(proc) << proc.error().message;
  EXPECT_FALSE(proc->mapped());
  EXPECT_NE(proc->text().find("Pid:"), std::string_view::npos);
  const std::string path = temp_file("empty", "");
  auto empty = MappedFile::open(path, 100, "test file");
  std::filesystem::remove(path);
  ASSERT_TRUE(empty) << empty.error().message;
  EXPECT_EQ(empty->text(), "");
}

TEST(CommonMappedFile, ErrorsAreReadTextFilesErrors) {
  auto missing = MappedFile::open("/nonexistent/x", 100, "test file");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message, "/nonexistent/x: cannot read: No such file or directory");
  const std::string path = temp_file("big", std::string(3000, 'x'));
  auto big = MappedFile::open(path, 2048, "hash index");
  std::filesystem::remove(path);
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().message, path + ": cannot read: larger than 2 KiB, not a hash index");
}

}  // namespace
}  // namespace ferry
