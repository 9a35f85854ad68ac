// A rank's environment as ferryd composes it: layers merged by name, then mpirun --prefix's
// directories put first on PATH and LD_LIBRARY_PATH over whatever the layers gave.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ferry/process/spawn.hpp"

namespace ferry {
namespace {

using Env = std::vector<std::string>;

TEST(SpawnEnv, LaterLayersWinByName) {
  EXPECT_EQ(merge_environment({{"A=1", "B=2"}, {"A=3", "C=4"}, {"=x", "nothing"}}),
            (Env{"A=3", "B=2", "C=4"}));
}

TEST(SpawnEnv, PrefixDirectoriesGoFirstOverTheHostsValues) {
  const Env host = {"HOME=/root", "PATH=/usr/bin:/bin", "LD_LIBRARY_PATH_X=keep"};
  EXPECT_EQ(prepend_paths(host, {"PATH=/opt/ompi/bin", "LD_LIBRARY_PATH=/opt/ompi/lib"}),
            (Env{"HOME=/root", "PATH=/opt/ompi/bin:/usr/bin:/bin", "LD_LIBRARY_PATH_X=keep",
                 "LD_LIBRARY_PATH=/opt/ompi/lib"}));
  // An empty value is not kept as an empty entry (which would mean the working directory).
  EXPECT_EQ(prepend_paths({"LD_LIBRARY_PATH="}, {"LD_LIBRARY_PATH=/p/lib"}),
            (Env{"LD_LIBRARY_PATH=/p/lib"}));
  // A later prepend of the same name comes first; malformed ones change nothing.
  EXPECT_EQ(prepend_paths({"PATH=/bin"}, {"PATH=/a", "PATH=/b", "PATH=", "=/x", "PATH"}),
            (Env{"PATH=/b:/a:/bin"}));
  EXPECT_EQ(prepend_paths(host, {}), host);
}

}  // namespace
}  // namespace ferry
