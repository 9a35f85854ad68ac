// The getifaddrs(3) walk, on this machine: every network namespace has its loopback.

#include <gtest/gtest.h>
#include <net/if.h>
#include <sys/socket.h>

#include "ferry/common/interface_addresses.hpp"

namespace ferry {
namespace {

TEST(InterfaceAddresses, ListsTheLoopbackWithItsAddressAndPrefix) {
  auto list = list_interface_addresses();
  ASSERT_TRUE(list) << list.error().message;
  bool found = false;
  for (const auto& e : *list) {
    if (e.interface != "lo" || e.family != AF_INET) continue;
    found = true;
    EXPECT_EQ("127.0.0.1", e.address);
    EXPECT_EQ(8, e.prefix);
    EXPECT_TRUE(e.flags & IFF_LOOPBACK);
    EXPECT_FALSE(e.link_local);
  }
  EXPECT_TRUE(found) << "no IPv4 entry for lo";
}

TEST(InterfaceAddresses, EntriesWithoutAnIpAddressHaveNoText) {
  auto list = list_interface_addresses();
  ASSERT_TRUE(list) << list.error().message;
  for (const auto& e : *list) {
    if (e.family == AF_INET || e.family == AF_INET6) {
      EXPECT_FALSE(e.address.empty()) << e.interface;
    } else {
      EXPECT_TRUE(e.address.empty()) << e.interface;
      EXPECT_EQ(0, e.prefix) << e.interface;
    }
  }
}

}  // namespace
}  // namespace ferry
