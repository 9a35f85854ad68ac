// Which parts may include which. cli reads a command line into JobOptions (a frontend
// header); frontend runs a job and knows no command line; app glues the two (and the
// launchers). An include the other way round would make cli and frontend one tangle.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
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
