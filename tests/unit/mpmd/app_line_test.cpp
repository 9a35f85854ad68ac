#include "ferry/mpmd/app_line.hpp"

#include <gtest/gtest.h>

namespace ferry {
namespace {

using Words = std::vector<std::string>;

TEST(AppLine, OneProgramHasNoSeparator) {
  EXPECT_FALSE(has_part_separator({"./probe", "A", "-np", "2"}));
  EXPECT_TRUE(has_part_separator({"./probe", "A", ":", "./probe", "B"}));
  // A word that holds a colon is an argument, not a separator.
  EXPECT_FALSE(has_part_separator({"./probe", "a:b", "::"}));
}

TEST(AppLine, SplitsAtColonWordsAndReadsEachLaterPartsOptions) {
  auto parts =
      split_app_line({"./probe", "A", ":",      "-np",  "2",  "-H", "fnode2:2", "-x", "K=V", "-env",
                      "E",       "1", "--wdir", "/tmp", "-N", "1",  "./probe",  "B",  "-np", "9"});
  ASSERT_TRUE(parts.ok()) << parts.error().message;
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ((*parts)[0].command, (Words{"./probe", "A"}));
  EXPECT_EQ((*parts)[0].np, 0);
  const AppPart& b = (*parts)[1];
  EXPECT_EQ(b.command, (Words{"./probe", "B", "-np", "9"}));  // the program's own -np stays
  EXPECT_EQ(b.np, 2);
  EXPECT_EQ(b.hosts, (Words{"fnode2:2"}));
  EXPECT_EQ(b.exports, (Words{"K=V", "E=1"}));
  EXPECT_EQ(b.wdir, "/tmp");
  EXPECT_EQ(b.per_host, 1);
  EXPECT_EQ(b.where, "part 2");
}

TEST(AppLine, HydraAndOpenMpiSpellingsAndAttachedValues) {
  auto p = parse_app_part({"-n", "3", "-hosts", "a,b", "-wdir", "w", "--np=4", "./x"}, "part 2");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->np, 4);
  EXPECT_EQ(p->hosts, (Words{"a,b"}));
  EXPECT_EQ(p->wdir, "w");
  auto q = parse_app_part({"-c", "2", "--host", "a", "-ppn", "2", "./y"}, "part 3");
  ASSERT_TRUE(q.ok()) << q.error().message;
  EXPECT_EQ(q->np, 2);
  EXPECT_EQ(q->per_host, 2);
}

TEST(AppLine, EmptyPartsAreRefusedNamingWhere) {
  for (const Words& line : {Words{"./a", ":", ":", "./b"}, Words{"./a", ":"}, Words{":", "./b"}}) {
    auto parts = split_app_line(line);
    ASSERT_FALSE(parts.ok());
    EXPECT_NE(parts.error().message.find("is empty"), std::string::npos) << parts.error().message;
  }
}

TEST(AppLine, ABadPartIsOneLineNamingThePartAndTheWord) {
  auto unknown = split_app_line({"./a", ":", "--bind-to", "core", "./b"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(
      unknown.error().message.rfind("part 2: '--bind-to' is not an option a part may carry", 0), 0u)
      << unknown.error().message;
  auto bad_np = split_app_line({"./a", ":", "-np", "x", "./b"});
  ASSERT_FALSE(bad_np.ok());
  EXPECT_EQ(bad_np.error().message, "part 2: -np: bad value 'x' (expected a whole number from 1)");
  auto no_command = split_app_line({"./a", ":", "-np", "2"});
  ASSERT_FALSE(no_command.ok());
  EXPECT_EQ(no_command.error().message, "part 2: no command after its options");
  auto no_value = split_app_line({"./a", ":", "./b", ":", "-np"});
  ASSERT_FALSE(no_value.ok());
  EXPECT_EQ(no_value.error().message, "part 3: -np needs a value");
}

TEST(AppLine, AppFileLinesCommentsQuotesAndContinuations) {
  auto parts = parse_app_file_text(
      "# controller first\n"
      "-np 1 ./controller --name 'the boss'\n"
      "\n"
      "-np 4 -H a:2,b:2 \\\n"
      "   -x OMP_NUM_THREADS=2 ./worker\n",
      "apps.txt");
  ASSERT_TRUE(parts.ok()) << parts.error().message;
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ((*parts)[0].command, (Words{"./controller", "--name", "the boss"}));
  EXPECT_EQ((*parts)[0].where, "apps.txt:2");
  EXPECT_EQ((*parts)[1].np, 4);
  EXPECT_EQ((*parts)[1].exports, (Words{"OMP_NUM_THREADS=2"}));
  EXPECT_EQ((*parts)[1].where, "apps.txt:4");
}

TEST(AppLine, AppFileErrorsNameFileAndLine) {
  auto bad = parse_app_file_text("-np 1 ./a\n-np 2 --tag-output ./b\n", "apps.txt");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message.rfind("apps.txt:2: '--tag-output' is not an option", 0), 0u)
      << bad.error().message;
  auto quote = parse_app_file_text("-np 1 './a\n", "apps.txt");
  ASSERT_FALSE(quote.ok());
  EXPECT_EQ(quote.error().message.rfind("apps.txt:1: unbalanced quote", 0), 0u);
  auto colon = parse_app_file_text("-np 1 ./a : -np 1 ./b\n", "apps.txt");
  ASSERT_FALSE(colon.ok());
  EXPECT_NE(colon.error().message.find("one part a line"), std::string::npos);
  auto none = parse_app_file_text("# nothing\n\n", "apps.txt");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().message.rfind("apps.txt: no part", 0), 0u);
  auto missing = read_app_file("/nonexistent/apps.txt");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message.rfind("/nonexistent/apps.txt: cannot read", 0), 0u);
}

}  // namespace
}  // namespace ferry
