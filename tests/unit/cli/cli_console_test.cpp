// ferryrun's console, summary, argument and environment options, on the command line and
// in the job file.

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "ferry/cli/ferryrun_cli.hpp"
#include "ferry/cli/rank_list.hpp"

namespace ferry {
namespace {

ParseOutcome parse(std::vector<std::string> args) {
  args.insert(args.begin(), "ferryrun");
  return parse_ferryrun_args(args);
}

struct TempFile {
  explicit TempFile(const std::string& text) {
    char tmpl[] = "/tmp/ferry-cli-console.XXXXXX";
    const int fd = ::mkstemp(tmpl);
    ::close(fd);
    path = tmpl;
    std::ofstream(path) << text;
  }
  ~TempFile() { ::unlink(path.c_str()); }
  std::string path;
};

TEST(CliConsole, ConsoleRanksFoldSummaryAndTheHostTag) {
  auto r = parse({"-np", "8", "--console-ranks", "0,4-5", "--fold", "--summary=ranks",
                  "--tag-style", "host", "true"});
  ASSERT_TRUE(r.config.has_value());
  EXPECT_EQ(r.config->output.console_ranks, (std::vector<int>{0, 4, 5}));
  EXPECT_TRUE(r.config->output.fold);
  EXPECT_EQ(r.config->job.summary, JobOptions::Summary::kRanks);
  EXPECT_EQ(r.config->output.tag, TagStyle::kHost);
  r = parse({"-np", "2", "--summary", "true"});
  ASSERT_TRUE(r.config.has_value());
  EXPECT_EQ(r.config->job.summary, JobOptions::Summary::kHosts);
  EXPECT_EQ(r.config->job.command, (std::vector<std::string>{"true"}));
  // `--summary ranks` would run "ranks": refused with the spelling that works.
  EXPECT_FALSE(parse({"--summary", "ranks", "true"}).config.has_value());
  EXPECT_FALSE(parse({"--console-ranks", "3-1", "true"}).config.has_value());
  EXPECT_FALSE(parse({"--summary=all", "true"}).config.has_value());
}

TEST(CliConsole, RankLists) {
  EXPECT_EQ(*parse_rank_list("7"), (std::vector<int>{7}));
  EXPECT_EQ(*parse_rank_list("0-2,9"), (std::vector<int>{0, 1, 2, 9}));
  for (const char* bad : {"", "a", "1,", "-1", "2-", "1-2-3", "1 2"})
    EXPECT_FALSE(parse_rank_list(bad).ok()) << bad;
  EXPECT_EQ(parse_rank_list("0,x").error().message, "'x' is not a rank or a range such as 0,4-7");
}

TEST(CliConsole, ExpandArgsAndTheLocalRankSpelling) {
  auto r = parse({"--expand-args", "--torch-local-rank-arg=underscore", "python3", "t.py",
                  "--gpu={local_rank}"});
  ASSERT_TRUE(r.config.has_value());
  EXPECT_TRUE(r.config->job.expand_args);
  EXPECT_TRUE(r.config->job.torch_local_rank_arg);
  EXPECT_TRUE(r.config->job.torch_local_rank_underscore);
  r = parse({"--torch-local-rank-arg", "python3", "t.py"});
  ASSERT_TRUE(r.config.has_value());
  EXPECT_TRUE(r.config->job.torch_local_rank_arg);
  EXPECT_FALSE(r.config->job.torch_local_rank_underscore);
  EXPECT_FALSE(parse({"--expand-args", "python3", "--x={rnak}"}).config.has_value());
  EXPECT_FALSE(parse({"--torch-local-rank-arg=dot", "python3"}).config.has_value());
  // Without --expand-args braces are plain text.
  r = parse({"echo", "{rnak}"});
  ASSERT_TRUE(r.config.has_value());
  EXPECT_FALSE(r.config->job.expand_args);
}

TEST(CliConsole, EnvironmentByPatternFileAndAll) {
  ::setenv("FERRYTEST_NCCL_A", "1", 1);
  ::setenv("FERRYTEST_NCCL_B", "2", 1);
  TempFile vars("# training\nLR=0.1\nFERRYTEST_NCCL_B=file\n");
  auto r = parse({"-x", "FERRYTEST_NCCL_*", "--env-file", vars.path, "true"});
  ASSERT_TRUE(r.config.has_value());
  // -x comes last and wins over the file.
  EXPECT_EQ(r.config->job.exports,
            (std::vector<std::string>{"LR=0.1", "FERRYTEST_NCCL_A=1", "FERRYTEST_NCCL_B=2"}));
  r = parse({"--env-all", "true"});
  ASSERT_TRUE(r.config.has_value());
  const auto& ex = r.config->job.exports;
  EXPECT_NE(std::find(ex.begin(), ex.end(), "FERRYTEST_NCCL_A=1"), ex.end());
  for (const auto& kv : ex) EXPECT_FALSE(kv.starts_with("HOME=")) << kv;
  EXPECT_FALSE(parse({"--env-file", "/nonexistent/x.env", "true"}).config.has_value());
  ::unsetenv("FERRYTEST_NCCL_A");
  ::unsetenv("FERRYTEST_NCCL_B");
}

TEST(CliConsole, JobFileKeys) {
  ::setenv("FERRYTEST_GLOO_X", "g", 1);
  TempFile vars("FROM_FILE=1\n");
  TempFile job("command = [\"true\"]\nexport = [\"FERRYTEST_GLOO_*\"]\nenv_file = \"" + vars.path +
               "\"\n[output]\ntag = \"host\"\nconsole_ranks = \"1-2\"\nfold = true\n"
               "summary = \"hosts\"\n");
  auto r = parse({"--config", job.path});
  ASSERT_TRUE(r.config.has_value());
  EXPECT_EQ(r.config->output.tag, TagStyle::kHost);
  EXPECT_EQ(r.config->output.console_ranks, (std::vector<int>{1, 2}));
  EXPECT_TRUE(r.config->output.fold);
  EXPECT_EQ(r.config->job.summary, JobOptions::Summary::kHosts);
  EXPECT_EQ(r.config->job.exports, (std::vector<std::string>{"FERRYTEST_GLOO_X=g", "FROM_FILE=1"}));
  TempFile bad("command = [\"true\"]\n[output]\nconsole_ranks = \"x\"\n");
  EXPECT_FALSE(parse({"--config", bad.path}).config.has_value());
  ::unsetenv("FERRYTEST_GLOO_X");
}

}  // namespace
}  // namespace ferry
