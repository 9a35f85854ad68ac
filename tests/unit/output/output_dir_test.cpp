// prepare_output_dir, and per-rank files that never follow a symlink: ferryrun often runs
// as root, and an output directory another user controls must not let that user point a
// rank's file at anything.
#include "ferry/output/output_dir.hpp"

#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "console_test_support.hpp"

namespace ferry {
namespace {

using namespace test_support;

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  ::stat(p.c_str(), &st);
  return st.st_mode & 07777;
}

std::string error_of(const std::string& dir) {
  Status st = prepare_output_dir(dir);
  return st ? "" : st.error().message;
}

TEST(OutputDir, MissingDirectoriesAreMadeForThisUserOnly) {
  TempDir tmp;
  const fs::path out = tmp.path / "a" / "b";
  EXPECT_EQ(error_of(out.string()), "");
  EXPECT_TRUE(fs::is_directory(out));
  EXPECT_EQ(mode_of(tmp.path / "a"), 0700u);
  EXPECT_EQ(mode_of(out), 0700u);
  EXPECT_TRUE(fs::is_empty(out));         // the probe file is gone
  EXPECT_EQ(error_of(out.string()), "");  // an existing directory of this user is fine
}

TEST(OutputDir, PathsThatCannotHoldFilesAreRefused) {
  TempDir tmp;
  std::ofstream(tmp.path / "file") << "x";
  const std::string file = (tmp.path / "file").string();
  EXPECT_EQ(error_of(file), file + ": " + file + " is not a directory");
  EXPECT_NE(error_of(file + "/sub").find("is not a directory"), std::string::npos);
  EXPECT_NE(error_of("/proc").find("cannot create files in /proc"), std::string::npos);
  EXPECT_NE(error_of("/proc/ferry-none/x").find("cannot create directory /proc/ferry-none"),
            std::string::npos);
}

TEST(OutputDir, ADirectoryOthersCanWriteIsRefused) {
  TempDir tmp;
  const fs::path open_dir = tmp.path / "open";
  fs::create_directory(open_dir);
  ::chmod(open_dir.c_str(), 0777);
  EXPECT_EQ(error_of(open_dir.string()),
            open_dir.string() + ": directory " + open_dir.string() + " is writable by every user");
  // Not even with the sticky bit: others could still make rank.0 first.
  ::chmod(open_dir.c_str(), 01777);
  EXPECT_NE(error_of(open_dir.string()).find("writable by every user"), std::string::npos);
  // A directory inside it is fine: the sticky bit keeps others from replacing it.
  EXPECT_EQ(error_of((open_dir / "mine").string()), "");
  // A world-writable directory without the sticky bit on the way is not.
  ::chmod(open_dir.c_str(), 0777);
  EXPECT_NE(error_of((open_dir / "mine").string()).find("writable by every user"),
            std::string::npos);
}

TEST(OutputDir, ADirectoryOfAnotherUserBelowTmpIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a directory to nobody";
  const passwd* nobody = ::getpwnam("nobody");
  ASSERT_NE(nobody, nullptr);
  TempDir tmp;  // under /tmp, a world-writable sticky directory
  const fs::path theirs = tmp.path / "theirs";
  fs::create_directory(theirs);
  ASSERT_EQ(::chown(theirs.c_str(), nobody->pw_uid, nobody->pw_gid), 0);
  ::chmod(theirs.c_str(), 0755);
  EXPECT_EQ(error_of(theirs.string()),
            theirs.string() + ": directory " + theirs.string() + " belongs to nobody");
  // Below it too: nobody could rename the directory and put a symlink in its place.
  const fs::path below = theirs / "out";
  fs::create_directory(below);
  EXPECT_EQ(error_of(below.string()),
            below.string() + ": directory " + theirs.string() + " belongs to nobody");
}

TEST(OutputDir, RankFilesNeverFollowASymlink) {
  TempDir tmp;
  const fs::path target = tmp.path / "target";
  std::ofstream(target) << "keep";
  const fs::path out = tmp.path / "out";
  fs::create_directories(out / "rank.0");
  fs::create_symlink(target, out / "rank.0" / "stdout");
  fs::create_directory_symlink(tmp.path, out / "rank.1");
  OutputOptions o;
  o.world_size = 2;
  o.output_dir = out.string();
  Console con(o);
  con.out.write(0, StreamId::kStdout, "x\n");
  con.out.write(1, StreamId::kStdout, "y\n");
  con.out.close_stream(0, StreamId::kStdout);
  con.out.close_stream(1, StreamId::kStdout);
  con.out.flush();
  EXPECT_EQ(read_file(target), "keep");
  EXPECT_FALSE(fs::exists(tmp.path / "stdout"));  // not written through rank.1's link
  ASSERT_EQ(con.warnings.size(), 1u);
  EXPECT_NE(con.warnings[0].find("symbolic links"), std::string::npos) << con.warnings[0];
  EXPECT_EQ(con.cout.text(), "[0]<stdout>:x\n[1]<stdout>:y\n");  // the console still has it
}

}  // namespace
}  // namespace ferry
