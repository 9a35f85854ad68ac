// ConsoleOutput's per-rank files: names in both layouts, exact bytes, and file errors as
// one warning.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "console_test_support.hpp"

namespace ferry {
namespace {

using namespace std::string_literals;
using namespace test_support;

TEST(ConsoleOutput, RankFilePaths) {
  OutputOptions o;
  o.output_dir = "/d/";
  o.world_size = 16;
  EXPECT_EQ(rank_file_path(o, 0, StreamId::kStdout), "/d/rank.00/stdout");
  EXPECT_EQ(rank_file_path(o, 15, StreamId::kStderr), "/d/rank.15/stderr");
  o.world_size = 1;
  EXPECT_EQ(rank_file_path(o, 0, StreamId::kStdout), "/d/rank.0/stdout");
  o.world_size = 10;
  EXPECT_EQ(rank_file_path(o, 3, StreamId::kStdout), "/d/rank.3/stdout");
  o.world_size = 101;
  EXPECT_EQ(rank_file_path(o, 7, StreamId::kStdout), "/d/rank.007/stdout");
  // Open MPI pads to the digits of the rank count, horovodrun to those of the last rank.
  o.layout = FileLayout::kOpenMpi;
  EXPECT_EQ(rank_file_path(o, 7, StreamId::kStderr), "/d/1/rank.007/stderr");
  o.world_size = 10;
  EXPECT_EQ(rank_file_path(o, 3, StreamId::kStdout), "/d/1/rank.03/stdout");
  o.world_size = 9;
  EXPECT_EQ(rank_file_path(o, 3, StreamId::kStdout), "/d/1/rank.3/stdout");
}

TEST(ConsoleOutput, PerRankFilesHorovodLayout) {
  TempDir dir;
  OutputOptions o;
  o.world_size = 16;
  o.output_dir = (dir.path / "out").string();  // created as needed
  Console con(o);
  for (int r = 0; r < 16; ++r) {
    con.out.write(r, StreamId::kStdout, "rank " + std::to_string(r) + "\npartial");
    if (r % 2 == 0) con.out.write(r, StreamId::kStderr, "e\0rr"s);
  }
  for (int r = 0; r < 16; ++r) {
    con.out.close_stream(r, StreamId::kStdout);
    con.out.close_stream(r, StreamId::kStderr);
  }
  con.out.flush();
  for (int r = 0; r < 16; ++r) {
    char name[32];
    std::snprintf(name, sizeof name, "rank.%02d", r);
    EXPECT_EQ(read_file(dir.path / "out" / name / "stdout"),
              "rank " + std::to_string(r) + "\npartial");
    ASSERT_TRUE(fs::exists(dir.path / "out" / name / "stderr")) << name;
    EXPECT_EQ(read_file(dir.path / "out" / name / "stderr"), r % 2 == 0 ? "e\0rr"s : "");
  }
  EXPECT_FALSE(fs::exists(dir.path / "out" / "rank.0"));
  EXPECT_TRUE(con.warnings.empty());
}

TEST(ConsoleOutput, PerRankFilesOpenMpiLayout) {
  TempDir dir;
  OutputOptions o;
  o.world_size = 16;
  o.layout = FileLayout::kOpenMpi;
  o.output_dir = dir.path.string();
  fs::create_directories(dir.path / "1" / "rank.05");
  std::ofstream(dir.path / "1" / "rank.05" / "stdout") << std::string(300000, '!');  // old run
  Console con(o);
  const std::string big(100000, 'q');  // larger than the file buffer
  con.out.write(5, StreamId::kStdout, "small\n");
  con.out.write(5, StreamId::kStdout, big);
  con.out.write(5, StreamId::kStderr, "err\n");
  con.out.flush();
  EXPECT_EQ(read_file(dir.path / "1" / "rank.05" / "stdout"), "small\n" + big);
  EXPECT_EQ(read_file(dir.path / "1" / "rank.05" / "stderr"), "err\n");
  con.out.close_stream(5, StreamId::kStderr);
  con.out.write(5, StreamId::kStderr, "late\n");  // after close: appended, not truncated
  con.out.flush();
  EXPECT_EQ(read_file(dir.path / "1" / "rank.05" / "stderr"), "err\nlate\n");
  EXPECT_FALSE(fs::exists(dir.path / "1" / "rank.5"));
}

TEST(ConsoleOutput, FileErrorIsOneWarningNotACrash) {
  TempDir dir;
  OutputOptions o = unwritable_files(dir);
  o.world_size = 4;
  Console con(o);
  for (int r = 0; r < 4; ++r) con.out.write(r, StreamId::kStdout, "line\n");
  for (int r = 0; r < 4; ++r) con.out.close_stream(r, StreamId::kStdout);
  con.out.flush();
  ASSERT_EQ(con.warnings.size(), 1u);
  EXPECT_NE(con.warnings[0].find("rank.0/stdout"), std::string::npos) << con.warnings[0];
  EXPECT_EQ(con.cout.text(),
            "[0]<stdout>:line\n[1]<stdout>:line\n[2]<stdout>:line\n"
            "[3]<stdout>:line\n");
}

TEST(ConsoleOutput, DefaultWarningIsAWholeLineOnStderrNamingTheProgram) {
  for (const std::string program : {"ferryrun", "mpirun"}) {
    Capture cout, cerr;
    TempDir dir;
    OutputOptions o = unwritable_files(dir);
    o.program = program;  // the name the user typed
    ConsoleOutput out(o, cout.fd(), cerr.fd());
    out.write(0, StreamId::kStdout, "a\n");
    out.flush();
    const std::string err = cerr.text();
    EXPECT_EQ(err.rfind(program + ": warning: cannot ", 0), 0u) << err;
    EXPECT_EQ(err.back(), '\n');
  }
}

}  // namespace
}  // namespace ferry
