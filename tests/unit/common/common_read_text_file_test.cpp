// The one whole-file reader: errors name the file, the size bound names what was expected.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "ferry/common/posix_handles.hpp"
#include "ferry/common/read_text_file.hpp"

namespace ferry {
namespace {

std::string temp_file(const std::string& name, const std::string& text) {
  std::string path = testing::TempDir() + "ferry_common_" + name + "_" + std::to_string(getpid());
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(CommonReadTextFile, ReadsEveryByte) {
  const std::string text = std::string("a\0b\n", 4) + std::string(20000, 'x');
  const std::string path = temp_file("bytes", text);
  auto got = read_text_file(path, 1 << 20, "test file");
  std::filesystem::remove(path);
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(*got, text);
}

TEST(CommonReadTextFile, ReadsProcFilesThatReportNoSize) {
  auto got = read_text_file("/proc/self/status", 1 << 20, "status file");
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_NE(got->find("Pid:"), std::string::npos);
}

TEST(CommonReadTextFile, ErrorsNameTheFile) {
  auto missing = read_text_file("/nonexistent/x", 100, "test file");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message, "/nonexistent/x: cannot read: No such file or directory");
  auto dir = read_text_file("/", 100, "test file");
  ASSERT_FALSE(dir);
  EXPECT_EQ(dir.error().message, "/: cannot read: Is a directory");
}

TEST(CommonReadTextFile, TheBoundSaysWhatWasExpected) {
  const std::string path = temp_file("big", std::string(3000, 'x'));
  auto exact = read_text_file(path, 3000, "hostfile");
  EXPECT_TRUE(exact);
  auto kib = read_text_file(path, 2048, "cgroup file");
  auto bytes = read_text_file(path, 100, "test file");
  std::filesystem::remove(path);
  ASSERT_FALSE(kib);
  EXPECT_EQ(kib.error().message, path + ": cannot read: larger than 2 KiB, not a cgroup file");
  ASSERT_FALSE(bytes);
  EXPECT_EQ(bytes.error().message, path + ": cannot read: larger than 100 bytes, not a test file");
  auto mib = read_text_file("/dev/zero", 1 << 20, "hostfile");
  ASSERT_FALSE(mib);
  EXPECT_EQ(mib.error().message, "/dev/zero: cannot read: larger than 1 MiB, not a hostfile");
}

TEST(CommonPosixHandles, UniqueFdClosesOnceAndMoves) {
  int raw = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(raw, 0);
  {
    UniqueFd a(raw);
    UniqueFd b(std::move(a));
    EXPECT_FALSE(a);
    EXPECT_EQ(b.get(), raw);
    EXPECT_EQ(::fcntl(raw, F_GETFD), FD_CLOEXEC);
  }
  EXPECT_EQ(::fcntl(raw, F_GETFD), -1);  // closed when `b` went out of scope
  UniqueFd c(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  int kept = c.release();
  EXPECT_FALSE(c);
  EXPECT_EQ(::close(kept), 0);
}

TEST(CommonPosixHandles, OpenDirOwnsTheStream) {
  DirPtr d = open_dir("/");
  ASSERT_TRUE(d);
  EXPECT_NE(::readdir(d.get()), nullptr);
  EXPECT_FALSE(open_dir("/nonexistent"));
}

}  // namespace
}  // namespace ferry
