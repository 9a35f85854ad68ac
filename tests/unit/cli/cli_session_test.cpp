// --detach, --nohup and --journal-max through the parser.
#include <gtest/gtest.h>

#include "ferry/cli/ferryrun_cli.hpp"
#include "ferryrun_line.hpp"

namespace ferry {
namespace {

using testing_cli::ferryrun;

TEST(CliSession, DetachIgnoresTheHangupAndReadsNoStdin) {
  auto r = ferryrun({"--detach", "-np", "2", "./app", "x y"});
  ASSERT_TRUE(r.config);
  EXPECT_TRUE(r.config->detach);
  EXPECT_FALSE(r.config->nohup);
  EXPECT_TRUE(r.config->job.ignore_hangup);
  EXPECT_EQ(r.config->job.stdin_rank, -1);
  EXPECT_EQ(r.config->journal_max, uint64_t{256} << 20);
  EXPECT_EQ(r.config->command_line, "ferryrun --detach -np 2 ./app x y");
}

TEST(CliSession, NohupKeepsStdinAndTheJournalMaxTakesUnits) {
  auto r = ferryrun({"--nohup", "--journal-max", "64K", "./app"});
  ASSERT_TRUE(r.config);
  EXPECT_TRUE(r.config->nohup);
  EXPECT_TRUE(r.config->job.ignore_hangup);
  EXPECT_EQ(r.config->job.stdin_rank, 0);
  EXPECT_EQ(r.config->journal_max, uint64_t{64} << 10);
  EXPECT_EQ(ferryrun({"--journal-max", "2G", "./app"}).config->journal_max, uint64_t{2} << 30);
  EXPECT_FALSE(ferryrun({"./app"}).config->job.ignore_hangup);
}

TEST(CliSession, BadValuesAreOneLine) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--detach", "--stdin", "1", "./app"},
        {"--journal-max", "10", "./app"},
        {"--journal-max", "1T", "./app"},
        {"--journal-max", "", "./app"}}) {
    testing::internal::CaptureStderr();
    auto r = ferryrun(args);
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(r.exit_code, 2) << args[1];
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  }
  testing::internal::CaptureStderr();
  ferryrun({"--detach", "--stdin", "1", "./app"});
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "ferryrun: --detach and --stdin 1: a detached job has no terminal to read from\n");
}

}  // namespace
}  // namespace ferry
