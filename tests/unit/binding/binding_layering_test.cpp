// The binding part uses only common and the wire codec (docs/design.md): ferryd's HostBinder
// lives here, so nothing of the daemon, rendezvous or frontend may creep back in with it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace ferry {
namespace {

namespace fs = std::filesystem;

// "file: #include ..." for each ferry include under `dirs` not starting with one of `allowed`.
std::vector<std::string> foreign_includes(const std::vector<std::string>& dirs,
                                          const std::vector<std::string>& allowed) {
  std::vector<std::string> found;
  for (const auto& d : dirs)
    for (const auto& e : fs::recursive_directory_iterator(fs::path(FERRY_SOURCE_DIR) / d)) {
      if (!e.is_regular_file()) continue;
      std::ifstream in(e.path());
      for (std::string line; std::getline(in, line);) {
        if (!line.starts_with("#include \"ferry/")) continue;
        bool ok = false;
        for (const auto& a : allowed) ok = ok || line.starts_with("#include \"" + a);
        if (!ok) found.push_back(d + "/" + e.path().filename().string() + ": " + line);
      }
    }
  return found;
}

TEST(BindingLayering, IncludesOnlyCommonAndTheWireCodec) {
  EXPECT_EQ(foreign_includes({"include/ferry/binding", "src/binding"},
                             {"ferry/binding/", "ferry/common/", "ferry/wire/codec.hpp"}),
            std::vector<std::string>{});
}

}  // namespace
}  // namespace ferry
