// Which parts may include which: the table of docs/design.md, as CMakeLists.txt holds it
// (FERRY_USES_<part>, written to <build>/ferry_parts.txt; the linker holds the calls to the
// same table). Finer rules on top: cli reads a command line into JobOptions (a frontend
// header); frontend runs a job and knows no command line; app glues the two (and the
// launchers). An include the other way round would make cli and frontend one tangle.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace ferry {
namespace {

namespace fs = std::filesystem;

// "file: #include ..." for each include under `dirs` (relative to the source tree) whose
// path starts with one of `forbidden`.
std::vector<std::string> includes_of(const std::vector<std::string>& dirs,
                                     const std::vector<std::string>& forbidden) {
  std::vector<std::string> found;
  for (const auto& d : dirs)
    for (const auto& e : fs::recursive_directory_iterator(fs::path(FERRY_SOURCE_DIR) / d)) {
      if (!e.is_regular_file()) continue;
      std::ifstream in(e.path());
      for (std::string line; std::getline(in, line);)
        for (const auto& f : forbidden)
          if (line.starts_with("#include \"" + f))
            found.push_back(d + "/" + e.path().filename().string() + ": " + line);
    }
  return found;
}

// part -> the parts it uses, from CMake's table ("part:used;used" lines).
std::map<std::string, std::set<std::string>> parts_table() {
  std::map<std::string, std::set<std::string>> table;
  std::ifstream in(FERRY_PARTS_TABLE);
  for (std::string line; std::getline(in, line);) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    auto& uses = table[line.substr(0, colon)];
    std::stringstream list(line.substr(colon + 1));
    for (std::string used; std::getline(list, used, ';');)
      if (!used.empty()) uses.insert(used);
  }
  return table;
}

TEST(Layering, EveryPartIncludesOnlyItselfAndThePartsItUses) {
  const auto table = parts_table();
  ASSERT_GE(table.size(), 13u) << "no parts table at " << FERRY_PARTS_TABLE;
  ASSERT_TRUE(table.at("common").empty());
  for (const auto& [part, uses] : table) {
    std::vector<std::string> forbidden;
    for (const auto& [other, unused] : table)
      if (other != part && !uses.contains(other)) forbidden.push_back("ferry/" + other + "/");
    EXPECT_EQ(includes_of({"include/ferry/" + part, "src/" + part}, forbidden),
              std::vector<std::string>{})
        << part << " uses only: " << testing::PrintToString(uses);
  }
}

TEST(Layering, FrontendIncludesNeitherCliNorApp) {
  EXPECT_EQ(includes_of({"include/ferry/frontend", "src/frontend"}, {"ferry/cli/", "ferry/app/"}),
            std::vector<std::string>{});
}

TEST(Layering, CliIncludesNoAppAndOfFrontendOnlyJobOptions) {
  EXPECT_EQ(includes_of({"include/ferry/cli", "src/cli"}, {"ferry/app/"}),
            std::vector<std::string>{});
  std::vector<std::string> frontend =
      includes_of({"include/ferry/cli", "src/cli"}, {"ferry/frontend/"});
  for (const auto& line : frontend)
    EXPECT_NE(line.find("ferry/frontend/job_options.hpp"), std::string::npos) << line;
}

}  // namespace
}  // namespace ferry
