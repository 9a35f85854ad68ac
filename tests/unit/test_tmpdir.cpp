// Every unit test process writes under a folder of its own, removed when the process ends:
// ::testing::TempDir() (which reads TEST_TMPDIR) names it, so the folders and files the tests
// make there are not left in /tmp run after run. ctest runs each test in a process of its
// own; a process killed before its end leaves its folder (/tmp/ferry-unit-XXXXXX).

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace {

namespace fs = std::filesystem;

class PrivateTempDir : public ::testing::Environment {
 public:
  void SetUp() override {
    if (const char* given = ::getenv("TEST_TMPDIR"); given && *given) return;  // the caller's
    char dir[] = "/tmp/ferry-unit-XXXXXX";
    if (!::mkdtemp(dir)) return;  // then /tmp/ as before
    dir_ = dir;
    // Other users may pass through it, as through /tmp (a test opens a socket to nobody), but
    // not list it.
    ::chmod(dir, 0711);
    ::setenv("TEST_TMPDIR", (dir_ + "/").c_str(), 1);
  }
  void TearDown() override {
    if (dir_.empty()) return;
    // Folders a test made read-only are opened up first (as root, or not).
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir_, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
      if (it->is_directory(ec) && !it->is_symlink(ec)) ::chmod(it->path().c_str(), 0700);
    fs::remove_all(dir_, ec);
    ::unsetenv("TEST_TMPDIR");
  }

 private:
  std::string dir_;
};

// Registered before main(): gtest_main's InitGoogleTest keeps environments added earlier.
[[maybe_unused]] ::testing::Environment* const kPrivateTempDir =
    ::testing::AddGlobalTestEnvironment(new PrivateTempDir);

}  // namespace
