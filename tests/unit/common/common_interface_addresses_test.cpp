// The getifaddrs(3) walk, on this machine: every network namespace has its loopback.

#include <gtest/gtest.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

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

bool has_ipv4_loopback() {
  auto list = list_interface_addresses();
  if (!list) return false;
  for (const auto& e : *list)
    if (e.interface == "lo" && e.family == AF_INET && e.address == "127.0.0.1") return true;
  return false;
}

// The list is read again once it is kInterfaceListFreshMs old, and not before: in a network
// namespace of its own (lo down, no address), a child lists, brings lo up (which gives it
// 127.0.0.1), and sees the address only after the freshness window.
TEST(InterfaceAddresses, AChangeShowsOnceTheListIsNoLongerFresh) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (a network namespace of its own)";
  const auto window = std::chrono::milliseconds(kInterfaceListFreshMs);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (unshare(CLONE_NEWNET) != 0) _exit(10);
    std::this_thread::sleep_for(window + std::chrono::milliseconds(100));  // the parent's list
    if (has_ipv4_loopback()) _exit(11);  // a fresh namespace's lo has no address
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    ifreq req{};
    std::strncpy(req.ifr_name, "lo", IFNAMSIZ - 1);
    if (fd < 0 || ioctl(fd, SIOCGIFFLAGS, &req) != 0) _exit(12);
    req.ifr_flags = static_cast<short>(req.ifr_flags | IFF_UP);
    if (ioctl(fd, SIOCSIFFLAGS, &req) != 0) _exit(13);
    close(fd);
    if (has_ipv4_loopback()) _exit(14);  // still the list read a moment ago
    std::this_thread::sleep_for(window + std::chrono::milliseconds(100));
    _exit(has_ipv4_loopback() ? 0 : 15);  // read again
  }
  int status = 0;
  ASSERT_EQ(pid, waitpid(pid, &status, 0));
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(0, WEXITSTATUS(status))
      << "10: unshare, 11: lo had an address, 12/13: ioctl, 14: the list was read again at "
         "once, 15: the change never showed";
}

}  // namespace
}  // namespace ferry
