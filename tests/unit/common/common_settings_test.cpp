// ferry's FERRY_* settings, read once at start: values, defaults, and one warning per value
// that cannot be used (left at its default).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <string_view>

#include "ferry/common/settings.hpp"

namespace ferry {
namespace {

// Both programs' settings of `env`: ferryrun's and ferryd's, each read by its own program.
Settings read(const std::map<std::string, std::string>& env, std::vector<std::string>& warnings) {
  auto lookup = [&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  Settings s = read_settings(lookup, SettingsOf::kFerryrun, warnings);
  const Settings d = read_settings(lookup, SettingsOf::kFerryd, warnings);
  s.output_copy = d.output_copy;
  s.device_root = d.device_root;
  s.sysfs_net = d.sysfs_net;
  return s;
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

TEST(Settings, EachProgramReadsAndWarnsAboutItsOwnOnly) {
  std::vector<std::string> w;
  auto lookup = [](const char* name) -> const char* {
    return std::string_view(name) == "FERRY_SSH_IO_THREADS" ? "banana"
           : std::string_view(name) == "FERRY_OUTPUT_COPY"  ? "1"
                                                            : nullptr;
  };
  const Settings d = read_settings(lookup, SettingsOf::kFerryd, w);
  EXPECT_TRUE(d.output_copy);
  EXPECT_TRUE(w.empty());  // ferryrun's bad value is ferryrun's to report, once
  const Settings r = read_settings(lookup, SettingsOf::kFerryrun, w);
  EXPECT_FALSE(r.output_copy);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].find("FERRY_SSH_IO_THREADS='banana' ignored"), 0u) << w[0];
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
