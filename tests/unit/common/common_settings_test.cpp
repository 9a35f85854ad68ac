// ferry's FERRY_* settings, read once at start: values, defaults, and one warning per value
// that cannot be used (left at its default).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "ferry/common/settings.hpp"

namespace ferry {
namespace {

Settings read(const std::map<std::string, std::string>& env, std::vector<std::string>& warnings) {
  return read_settings(
      [&](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      warnings);
}

TEST(Settings, DefaultsWhenNothingIsSet) {
  std::vector<std::string> w;
  const Settings s = read({}, w);
  EXPECT_FALSE(s.ssh_io_threads);
  EXPECT_FALSE(s.output_on_ssh);
  EXPECT_FALSE(s.output_copy);
  EXPECT_EQ(s.device_root, "/");
  EXPECT_EQ(s.sysfs_net, "/sys/class/net");
  EXPECT_TRUE(w.empty());
}

TEST(Settings, EveryValueIsRead) {
  std::vector<std::string> w;
  const Settings s = read({{"FERRY_SSH_IO_THREADS", "-1"},
                           {"FERRY_OUTPUT_ROUTE", "ssh"},
                           {"FERRY_OUTPUT_COPY", "1"},
                           {"FERRY_TEST_DEVICE_ROOT", "/tmp/fake"},
                           {"FERRY_TEST_SYSFS_NET", "/tmp/net"}},
                          w);
  EXPECT_EQ(s.ssh_io_threads, -1);
  EXPECT_TRUE(s.output_on_ssh);
  EXPECT_TRUE(s.output_copy);
  EXPECT_EQ(s.device_root, "/tmp/fake");
  EXPECT_EQ(s.sysfs_net, "/tmp/net");
  EXPECT_TRUE(w.empty());
}

TEST(Settings, AValueThatCannotBeUsedIsIgnoredWithOneWarningEach) {
  std::vector<std::string> w;
  const Settings s = read({{"FERRY_SSH_IO_THREADS", "4x"},
                           {"FERRY_OUTPUT_ROUTE", "direct"},
                           {"FERRY_OUTPUT_COPY", "yes"},
                           {"FERRY_TEST_DEVICE_ROOT", ""}},
                          w);
  EXPECT_FALSE(s.ssh_io_threads);
  EXPECT_FALSE(s.output_on_ssh);
  EXPECT_FALSE(s.output_copy);
  EXPECT_EQ(s.device_root, "/");  // empty: the real one
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0], "FERRY_SSH_IO_THREADS='4x' ignored (expected a whole number from -1 to 64)");
  EXPECT_EQ(w[1], "FERRY_OUTPUT_ROUTE='direct' ignored (the one value is ssh)");
  EXPECT_EQ(w[2], "FERRY_OUTPUT_COPY='yes' ignored (1 or 0)");
}

TEST(Settings, ThreadCountOutsideItsRangeIsIgnored) {
  std::vector<std::string> w;
  EXPECT_FALSE(read({{"FERRY_SSH_IO_THREADS", "65"}}, w).ssh_io_threads);
  EXPECT_FALSE(read({{"FERRY_SSH_IO_THREADS", "-2"}}, w).ssh_io_threads);
  EXPECT_EQ(read({{"FERRY_SSH_IO_THREADS", "64"}}, w).ssh_io_threads, 64);
  EXPECT_EQ(w.size(), 2u);
}

}  // namespace
}  // namespace ferry
