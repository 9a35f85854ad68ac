// Exported variables by pattern and from env files; placeholders in the command's arguments.
#include "ferry/plan/env_sources.hpp"

#include <gtest/gtest.h>

#include "ferry/plan/arg_placeholders.hpp"

namespace ferry {
namespace {

TEST(ExportPatterns, APatternBecomesTheNamesItMatchesInOrder) {
  char a[] = "NCCL_DEBUG=INFO", b[] = "PATH=/bin", c[] = "NCCL_IB_HCA=mlx5", d[] = "NCCLX=1";
  char* env[] = {a, b, c, d, nullptr};
  std::vector<std::string> warnings;
  auto out = expand_export_patterns({"A=1", "NCCL_*", "B"}, env, warnings);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, (std::vector<std::string>{"A=1", "NCCL_DEBUG", "NCCL_IB_HCA", "B"}));
  EXPECT_TRUE(warnings.empty());
  out = expand_export_patterns({"GLOO_?"}, env, warnings);
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->empty());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0], "-x 'GLOO_?': matches no variable in this environment");
  EXPECT_FALSE(expand_export_patterns({"NCCL_*=1"}, env, warnings).ok());
}

TEST(EnvFile, KeyValueLinesCommentsExportAndQuotes) {
  auto vars = parse_env_file(
      "# a comment\n\nA=1\nexport B=two words\n  C=\"quoted\"\nD='single'\nE=\nF\nG=a=b\r\n",
      "vars.env");
  ASSERT_TRUE(vars.ok()) << vars.error().message;
  EXPECT_EQ(*vars, (std::vector<std::string>{"A=1", "B=two words", "C=quoted", "D=single",
                                             "E=", "F", "G=a=b"}));
}

TEST(EnvFile, ABadLineIsNamedByFileAndLine) {
  auto vars = parse_env_file("A=1\n\nBAD NAME=2\n", "vars.env");
  ASSERT_FALSE(vars.ok());
  EXPECT_EQ(vars.error().message, "vars.env:3: 'BAD NAME=2' is not KEY=VALUE (bad variable name)");
  EXPECT_FALSE(read_env_file("/nonexistent/vars.env").ok());
}

TEST(ArgPlaceholders, EachNameIsReplacedAndDoubledBracesAreLiteral) {
  const PlaceholderValues v{5, 1, 2, 8, "10.0.0.1", "29500"};
  EXPECT_EQ(expand_placeholders("--local_rank={local_rank}", v), "--local_rank=1");
  EXPECT_EQ(expand_placeholders("{rank}/{world_size}@{node_rank}", v), "5/8@2");
  EXPECT_EQ(expand_placeholders("tcp://{master_addr}:{master_port}", v), "tcp://10.0.0.1:29500");
  EXPECT_EQ(expand_placeholders("{{rank}} {{}}", v), "{rank} {}");
  EXPECT_EQ(expand_placeholders("plain", v), "plain");
}

TEST(ArgPlaceholders, UnknownNamesAndOpenBracesAreRefusedBeforeTheJob) {
  EXPECT_TRUE(check_placeholders({"--gpu={local_rank}", "{{x}}"}).ok());
  auto bad = check_placeholders({"ok", "--x={rnak}"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("unknown placeholder {rnak} in '--x={rnak}'"),
            std::string::npos);
  EXPECT_FALSE(check_placeholders({"{rank"}).ok());
}

}  // namespace
}  // namespace ferry
