// Signal names from ferry's own table (glibc 2.31 has no sigabbrev_np), against glibc's.

#include <gtest/gtest.h>

#include <csignal>
#include <cstring>

#include "ferry/common/signal_names.hpp"

namespace ferry {
namespace {

// The tests build against this machine's glibc (2.32 or newer), whose own table is the model.
TEST(SignalNames, SameAsGlibcForEveryNumber) {
  for (int sig = -2; sig <= SIGRTMAX + 2; ++sig) {
    const char* ours = signal_abbrev(sig);
    const char* glibc = ::sigabbrev_np(sig);
    if (glibc == nullptr) {
      EXPECT_EQ(ours, nullptr) << sig;
    } else {
      ASSERT_NE(ours, nullptr) << sig;
      EXPECT_STREQ(ours, glibc) << sig;
    }
  }
  EXPECT_STREQ(signal_abbrev(SIGTERM), "TERM");
  EXPECT_STREQ(signal_abbrev(SIGKILL), "KILL");
  EXPECT_EQ(signal_abbrev(0), nullptr);
}

}  // namespace
}  // namespace ferry
