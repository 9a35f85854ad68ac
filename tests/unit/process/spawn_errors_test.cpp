// Why a rank could not start, as the user would put it: the kernel's errno alone says
// "Permission denied" for a directory and "No such file or directory" for a script whose
// interpreter is missing.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <string>

#include "ferry/process/spawn.hpp"

namespace ferry {
namespace {

struct Dir {
  Dir() {
    char tmpl[] = "/tmp/ferry_spawn_test.XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~Dir() { std::system(("rm -rf " + path).c_str()); }
  std::string path;
};

std::string spawn_error(const std::string& path, const std::string& wdir = "") {
  SpawnRequest req;
  req.path = path;
  req.argv = {path};
  req.wdir = wdir;
  auto pid = spawn_process(req);
  if (pid) {
    ::waitpid(*pid, nullptr, 0);
    return "started";
  }
  ::wait(nullptr);  // the child that failed to exec
  return pid.error().message;
}

void write_script(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  ::chmod(path.c_str(), 0755);
}

TEST(SpawnErrors, ADirectoryIsSaidToBeOne) {
  Dir d;
  EXPECT_EQ(spawn_error(d.path), "cannot execute '" + d.path + "': is a directory");
  ::mkdir((d.path + "/sub").c_str(), 0755);
  EXPECT_EQ(spawn_error("./sub", d.path), "cannot execute './sub': is a directory");
}

TEST(SpawnErrors, AScriptWhoseInterpreterIsMissingNamesTheInterpreter) {
  Dir d;
  write_script(d.path + "/job.sh", "#!/nonexistent/python -u\nprint(1)\n");
  EXPECT_EQ(spawn_error(d.path + "/job.sh"),
            "interpreter /nonexistent/python of script " + d.path + "/job.sh not found");
  write_script(d.path + "/tight.sh", "#!/no/sh\n");
  EXPECT_EQ(spawn_error("./tight.sh", d.path), "interpreter /no/sh of script ./tight.sh not found");
}

// Callers branch on the cause by its errno, never by the text.
TEST(SpawnErrors, TheErrorCarriesTheExecErrno) {
  Dir d;
  auto code = [](const std::string& path) {
    SpawnRequest req;
    req.path = path;
    req.argv = {path};
    auto pid = spawn_process(req);
    if (pid) {
      ::waitpid(*pid, nullptr, 0);
      return 0;
    }
    ::wait(nullptr);
    return pid.error().code;
  };
  EXPECT_EQ(code(d.path + "/none"), ENOENT);
  EXPECT_EQ(code(d.path), EACCES);
  write_script(d.path + "/ok.sh", "#!/bin/sh\nexit 0\n");
  EXPECT_EQ(code(d.path + "/ok.sh"), 0);
}

TEST(SpawnErrors, OtherFailuresKeepTheSystemsReason) {
  Dir d;
  EXPECT_EQ(spawn_error(d.path + "/none"),
            "cannot execute '" + d.path + "/none': No such file or directory");
  write_script(d.path + "/ok.sh", "#!/bin/sh\nexit 0\n");
  EXPECT_EQ(spawn_error(d.path + "/ok.sh"), "started");
}

}  // namespace
}  // namespace ferry
